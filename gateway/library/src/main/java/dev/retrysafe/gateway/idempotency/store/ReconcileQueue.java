package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The fleet's UNCERTAIN records that their upstream can be asked about: a record enters it in the same atomic step
 * that makes it UNCERTAIN, if its reservation kept {@link LookupValues}, due once their delay has passed. Any
 * gateway instance claims the due ones (each with a lease, so that no other asks meanwhile; an instance that dies
 * loses nothing, its claims lapse), asks the upstream, and settles the record by the answer, as process polls do.
 */
public interface ReconcileQueue {

    /** Claims up to {@code max} records whose lookup is due, each for {@code claim} (longer than a lookup takes). */
    Flux<DueLookup> claimDue(int max, Duration claim);

    /**
     * Makes sure that every part of the queue holding lookups will be looked into, whatever was lost of what says
     * where to look (see {@link ProcessQueue#restoreLostSlots}), once per {@code interval} for the fleet: the call of
     * an instance that is not the first in the interval does nothing and emits 0. Emits how many parts had been lost.
     */
    Mono<Integer> restoreLostSlots(Duration interval);

    /**
     * Settles a claimed record by its lookup, only if it is still UNCERTAIN with the owner and since the moment it
     * had when claimed: an operator, the owner's own late answer, or a new request may have settled it meanwhile.
     * Found: COMPLETED with the lookup's answer, kept {@code retention}. Not found: released, its owner fenced like
     * an operator's release fences it. Failed: looked up again after a delay that doubles, from {@code firstDelay}
     * up to {@code maxDelay}. Emits whether it settled (or rescheduled) the record.
     */
    Mono<Boolean> settle(DueLookup due, LookupResult result);

    /**
     * A claimed record, with what its reservation kept.
     *
     * @param owner          the owner token on the record when claimed
     * @param uncertainSince when the record turned UNCERTAIN (the store's clock, epoch ms), as claimed
     */
    record DueLookup(String scopeHash, String routeId, String upstream, Map<String, String> values, String owner,
            long uncertainSince) {
        public DueLookup {
            values = Map.copyOf(values);
        }
    }

    /** What a lookup found. */
    sealed interface LookupResult {
        /**
         * The upstream has the request's result: it becomes the record's stored response.
         *
         * @param retention how long the record lives from now: the route's retention, or, when the answer names a
         *                  process not yet ended ({@code processId}), the route's hard cap while it runs
         * @param processId an unfinished process the answer names (on a route that tracks processes): queued for its
         *                  status polls and linked to the record, as a stored 202 is
         */
        record Found(StoredResponse response, Duration retention, String reason, Optional<String> processId)
                implements LookupResult {
        }

        /** The upstream never received the request: the record is released, a retry is forwarded. */
        record NotFound(String reason) implements LookupResult {
        }

        /** No answer to trust (an error, another status, no answer in time): asked again later. */
        record Failed(Duration firstDelay, Duration maxDelay) implements LookupResult {
        }
    }
}
