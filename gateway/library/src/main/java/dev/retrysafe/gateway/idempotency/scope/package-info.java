/**
 * IdempotencyScope: the tenant, route and key a record is bound to, and its hash (the Redis key).
 * <p>
 * Plain Java: may import key and fingerprint only.
 */
package dev.retrysafe.gateway.idempotency.scope;
