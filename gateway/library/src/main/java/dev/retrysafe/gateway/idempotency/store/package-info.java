/**
 * The store behind an interface (IdempotencyStore) and what it hands back (Reservation, OwnerToken), wake-ups of waiting requests (SettleSignals) and lease renewal while a request is forwarded (LeaseRenewals), and the fleet's queues beside the store: pending processes (ProcessQueue) and UNCERTAIN records to look up at their upstream (ReconcileQueue, LookupValues).
 * <p>
 * May import scope, record, fingerprint and background; never Redis (that is store.redis) and never the filter.
 */
package dev.retrysafe.gateway.idempotency.store;
