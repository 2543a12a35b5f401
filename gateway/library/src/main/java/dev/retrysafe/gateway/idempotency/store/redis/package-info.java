/**
 * The Redis adapter of the store: one Lua script per atomic step (META-INF/scripts), run by SHA on the store's own Lettuce connection (StoreConnection), the record codec, wake-ups over pub/sub, replica acknowledgements and the store's health.
 * <p>
 * May import store, background and the rules below it (scope, record, fingerprint, encryption) and operator's RecordInspector it implements; never the filter.
 */
package dev.retrysafe.gateway.idempotency.store.redis;
