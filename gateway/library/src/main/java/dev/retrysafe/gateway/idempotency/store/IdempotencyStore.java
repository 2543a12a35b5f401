package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;
import reactor.core.publisher.Mono;

/**
 * Where idempotency records live. Every operation is one atomic step on the server side: there is no
 * read-then-write anywhere, so two gateway instances cannot both win a key, and only the owner of a reservation
 * can settle it.
 */
public interface IdempotencyStore {

    /**
     * Reserves the scope for the request's owner, or returns the record already there. The stored response is only
     * returned when the fingerprints match. An in-flight record whose lease lapsed turns UNCERTAIN here. The owner's
     * own in-flight record (its reserve sent twice, after a reconnect) is reserved again.
     */
    Mono<Reservation> reserve(ReservationRequest request);

    /** Extends the owner's lease while its upstream exchange lasts; emits whether the owner still holds it. */
    Mono<Boolean> renew(IdempotencyScope scope, OwnerToken owner, Duration lease);

    /**
     * Stores the final response if the owner still holds the reservation (or the record vanished, unless an operator
     * released it). A response that names an unfinished process ({@link Completion#processId()}) queues the process
     * for its status polls and links it to the record, so that a status read through any gateway can end it
     * ({@link #processEnded}): the link lives as long as the record ({@link Completion#ttl()}).
     */
    Mono<CompletionResult> complete(Completion completion);

    /**
     * Frees the reservation if the owner still holds it; emits what it did. Either way the owner cannot reserve the
     * scope afterwards: a reserve of its that lands late is {@link Reservation.Fenced}.
     */
    Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner);

    /**
     * Marks the owner's in-flight record UNCERTAIN: sent, but no complete answer; or gives the true reason on the
     * owner's record that turned UNCERTAIN when its lease lapsed; or, when the record vanished (Redis lost it), writes
     * it anew UNCERTAIN ({@link SettleResult#RESTORED}), unless the owner was released from the scope. Emits what it
     * did.
     */
    Mono<SettleResult> markUncertain(UncertainMark mark);

    /**
     * Records that a linked process ended: from now on the record lives {@code retention}. {@code operation} is the
     * record's (the route id on a route that names none): process links are kept by it.
     */
    Mono<Boolean> processEnded(String operation, String processId, String terminalValue, Duration retention);

    /**
     * Registers interest in the scope being completed, released or made uncertain; the returned waiter fires when
     * that happens (on this instance or another one), and must be closed when no longer needed.
     */
    SettleWaiter awaitSettle(IdempotencyScope scope);

    /** What {@link #complete} did. */
    enum CompletionResult {
        /** Stored over the owner's reservation. */
        STORED,
        /** The record had vanished (Redis lost it); stored anew. */
        RESTORED,
        /**
         * Stored on the Redis master, but fewer replicas than {@code idempotency.replica-acks} acknowledged it in
         * time: a failover now would lose the result (the reservation survives, so the record turns UNCERTAIN).
         */
        STORED_UNACKNOWLEDGED,
        /**
         * This owner had already stored this result: a retried call whose first attempt took effect although its
         * answer came too late. Nothing lost, nothing written twice.
         */
        ALREADY_STORED,
        /** Someone else owns the record, or it is already settled: nothing written. */
        NOT_OWNER,
        /**
         * An operator released the record while this owner still forwarded the request: its result is not written,
         * neither over the next request's record nor as a record anew. The client's retry is a fresh request.
         */
        FENCED;

        /** Whether the response is in the store now (written by this call, or by its first attempt). */
        public boolean stored() {
            return this != NOT_OWNER && this != FENCED;
        }
    }

    /** What {@link #release} or {@link #markUncertain} did. */
    enum SettleResult {
        /** Done now. */
        DONE,
        /** This owner had already done it: a retried call whose first attempt took effect, its answer came late. */
        ALREADY_DONE,
        /** Someone else owns the record, or it is settled otherwise (an operator): nothing written. */
        NOT_OWNER,
        /** The record had vanished (Redis lost it): written anew as the step leaves it (UNCERTAIN marks only). */
        RESTORED
    }
}
