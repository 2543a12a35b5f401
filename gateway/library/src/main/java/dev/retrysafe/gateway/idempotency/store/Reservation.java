package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;

/** The answer of the store's atomic reserve step. */
public sealed interface Reservation {

    /** The key was free; the caller now owns it and forwards the request. */
    record Reserved(OwnerToken owner) implements Reservation {}

    /** The key is bound to an earlier request; the caller decides against that record. */
    record Taken(IdempotencyRecord existing) implements Reservation {}

    /**
     * This owner was released from the scope (it gave up this reservation, or an operator freed its record): its
     * reserve, arriving late, takes nothing. Never forwarded: its request was answered without it, or must be.
     */
    record Fenced(OwnerToken owner) implements Reservation {}
}
