package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.decision.Decision;
import dev.retrysafe.gateway.idempotency.decision.ReplayResponse;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.observability.RequestOutcome;
import dev.retrysafe.gateway.idempotency.observability.RequestReport;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.LookupValues;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.StoreCall;
import dev.retrysafe.gateway.idempotency.store.StoreCallNotSent;
import dev.retrysafe.gateway.idempotency.store.StoredResponseUnreadable;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * Reserve, and while another request holds the scope, wait for it and ask again: the loop that turns one guarded
 * request into one {@link Answer}. It writes nothing; the filter applies the answer.
 */
final class ReservationLoop {
    private static final Logger log = LoggerFactory.getLogger(ReservationLoop.class);
    private final RoutePolicy policy;
    private final IdempotencyStore store;
    private final Clock clock;
    private final IdempotencyScope scope;
    private final Fingerprints fingerprints;
    private final OwnerToken owner;
    private final String upstream;
    private final String method;
    private final String path;
    private final RequestReport report;
    private final long waitDeadline;
    private final Optional<LookupValues> lookup;

    /** @param lookup on a reconciling route, the values its lookup names, kept with the record */
    ReservationLoop(GuardedRoute route, GuardedRequest request, Optional<LookupValues> lookup) {
        this.policy = route.policy();
        this.store = route.store();
        this.clock = route.clock();
        this.lookup = lookup;
        this.scope = request.scope();
        this.fingerprints = request.fingerprints();
        this.owner = request.owner();
        this.upstream = request.upstream();
        this.method = request.method();
        this.path = request.path();
        this.report = request.report();
        this.waitDeadline = clock.millis() + policy.inFlightWait().toMillis();
    }

    Mono<Answer> answer() {
        return reserve().flatMap(this::answer)
                // Processed once already: never sent again, and not a fault the client can retry away.
                .onErrorResume(e -> e instanceof StoredResponseUnreadable || e instanceof Unreachable,
                        e -> Mono.just(e instanceof StoredResponseUnreadable unreadable
                                ? new Answer.ReplayUnreadable(unreadable)
                                : new Answer.StoreUnavailable(e.getCause())));
    }

    private Mono<Reservation> reserve() {
        ReservationRequest request = new ReservationRequest(scope, fingerprints, owner, policy.inFlightLease(),
                policy.unsettledRecordTtl(), upstream, remainingWait().toMillis() > 0, policy.upstreamHonoursKey(), method,
                path, lookup);
        return StoreCall.within(policy.storeTimeout(), () -> store.reserve(request))
                .onErrorMap(e -> !(e instanceof StoredResponseUnreadable), e -> {
                    if (!(e instanceof StoreCallNotSent)) {
                        releaseGivenUp();
                    }
                    return new Unreachable(e);
                });
    }

    /**
     * A reserve given up (its answer too late, or none) may still have run in Redis, or run later: a record with
     * an owner nobody holds, which would refuse every retry until its lease lapsed and then call it "outcome
     * unknown" although nothing was sent. So it is released with this request's owner token, in the background
     * (the client has its 503 at once), until Redis answers or {@link RoutePolicy#givenUpReleaseSpan()}. A reserve the
     * client refused before sending it ({@link StoreCallNotSent}: while Redis is away, every request) has nothing to
     * undo, and would only add a retrying release per refused request.
     */
    private void releaseGivenUp() {
        StoreCall.retriedFor(policy.givenUpReleaseSpan(), policy.storeTimeout(), () -> store.release(scope, owner))
                .subscribe(result -> log.debug("Reservation given up for scope {} released: {}", scope.hash(),
                        result), e -> log.warn("Reservation given up for scope {} could not be released ({}); if "
                                + "it was made, it lapses after {}", scope.hash(), e.toString(),
                                policy.inFlightLease()));
    }

    private Mono<Answer> answer(Reservation reservation) {
        if (reservation instanceof Reservation.Fenced) {
            // This request's own reservation was released (an operator freed it): refused as if the store could not
            // be asked, and never forwarded, whatever store-unavailable says. The client's retry starts afresh.
            return refuse(RequestOutcome.STORE_UNAVAILABLE, GatewayError.storeUnavailable(policy.retryAfter()));
        }
        if (!(reservation instanceof Reservation.Taken taken)) {
            return Mono.just(new Answer.Forward());
        }
        Decision decision = Decision.against(taken.existing(), fingerprints);
        ruleChangeSeen(taken.existing(), decision);
        if (decision instanceof Decision.Replay replay) {
            ReplayResponse response = ReplayResponse.of(replay.response(), policy.replayStatus(),
                    replay.processEnded());
            // One HTTP cannot carry (Netty would refuse it halfway, a 5xx on every retry): processed once, its
            // replay lost, never sent again.
            Optional<String> unwritable = response.unwritable();
            return Mono.just(unwritable.isPresent()
                    ? new Answer.ReplayUnreadable(new StoredResponseUnreadable(response.originalStatus(),
                            unwritable.get()))
                    : new Answer.Replay(response));
        }
        if (decision instanceof Decision.ReplayUnavailable unavailable) {
            return refuse(RequestOutcome.REPLAY_UNAVAILABLE, GatewayError.replayUnavailable(
                    unavailable.originalStatus(), policy.maxStoredResponseBytes()));
        }
        if (decision instanceof Decision.PayloadMismatch) {
            return refuse(RequestOutcome.MISMATCH, GatewayError.payloadMismatch());
        }
        if (decision instanceof Decision.Uncertain) {
            return refuse(RequestOutcome.UNCERTAIN, GatewayError.uncertainRetry(policy.retryAfter()));
        }
        return awaitSettle();
    }

    /**
     * Waits, holding no thread, for the in-flight request to be settled, then asks again. The waiter is registered
     * and listening before the second look, so a settle between the two cannot be missed. (Listening takes a round
     * trip when it subscribes to the record's shard channel; if that does not come within store-timeout, the second
     * look goes ahead and a settle elsewhere is only noticed when the wait ends.)
     */
    private Mono<Answer> awaitSettle() {
        Duration left = remainingWait();
        if (left.toMillis() <= 0) {
            return refuse(RequestOutcome.IN_FLIGHT_CONFLICT, GatewayError.stillInFlight(policy.retryAfter()));
        }
        SettleWaiter waiter = store.awaitSettle(scope);
        return StoreCall.within(policy.storeTimeout(), waiter::listening)
                .onErrorResume(TimeoutException.class, e -> Mono.empty())
                .then(Mono.defer(this::reserve))
                .flatMap(reservation -> stillInFlight(reservation)
                        ? waitFor(waiter, left).then(Mono.defer(() -> reserve().flatMap(this::answer)))
                        : answer(reservation))
                .doFinally(signal -> waiter.close());
    }

    /**
     * A record fingerprinted under other rules than this route's (a change rolling through the fleet, or two routes of
     * one operation): said at DEBUG with both rule sets, so a 409 a client calls wrong can be traced to the change.
     */
    private void ruleChangeSeen(IdempotencyRecord existing, Decision decision) {
        if (log.isDebugEnabled() && fingerprints.rulesDifferFrom(existing.fingerprints())) {
            log.debug("Scope {}: its record was fingerprinted under rules '{}', this route's are '{}': {}", scope.hash(),
                    existing.fingerprints().rules(), fingerprints.rules(), decision instanceof Decision.PayloadMismatch
                            ? "the strict fingerprints differ too, another payload (409)"
                            : "the same intent (the same " + (fingerprints.fingerprint()
                                    .equals(existing.fingerprints().fingerprint()) ? "fingerprint" : "strict fingerprint")
                                    + ")");
        }
    }

    private Mono<Void> waitFor(SettleWaiter waiter, Duration left) {
        return Mono.defer(() -> {
            Runnable waiting = report.waiting();
            return waiter.settled().timeout(left, Mono.empty()).doFinally(signal -> waiting.run());
        });
    }

    private boolean stillInFlight(Reservation reservation) {
        return reservation instanceof Reservation.Taken taken
                && Decision.against(taken.existing(), fingerprints) instanceof Decision.InFlight;
    }

    private Duration remainingWait() {
        return Duration.ofMillis(Math.max(0, waitDeadline - clock.millis()));
    }

    private static Mono<Answer> refuse(RequestOutcome outcome, GatewayError error) {
        return Mono.just(new Answer.Refusal(outcome, error));
    }

    /** The store could not be asked (an error or no answer within store-timeout). */
    private static final class Unreachable extends RuntimeException {
        Unreachable(Throwable cause) {
            super(cause);
        }
    }
}
