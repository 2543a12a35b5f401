package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;
import reactor.core.publisher.Mono;

/**
 * Where idempotency records live. Every operation is one atomic step on the server side: there is no
 * read-then-write anywhere, so two gateway instances cannot both win a key.
 */
public interface IdempotencyStore {

    /**
     * Reserves the scope for {@code owner} with a lease, or returns the record already there. The stored response
     * is only returned when the fingerprints match. {@code willWait} tells the store that the caller will wait for
     * the in-flight request to settle, so that settling it wakes the caller up.
     */
    Mono<Reservation> reserve(IdempotencyScope scope, Fingerprint fingerprint, OwnerToken owner, Duration lease,
            boolean willWait);

    /** Stores the final response if {@code owner} still holds the reservation; emits whether it did. */
    Mono<Boolean> complete(IdempotencyScope scope, OwnerToken owner, StoredResponse response, Duration retention);

    /** Frees the reservation if {@code owner} still holds it; emits whether it did. */
    Mono<Boolean> release(IdempotencyScope scope, OwnerToken owner);

    /**
     * Registers interest in the scope being completed or released; the returned waiter fires when that happens
     * (on this instance or another one), and must be closed when no longer needed.
     */
    SettleWaiter awaitSettle(IdempotencyScope scope);
}
