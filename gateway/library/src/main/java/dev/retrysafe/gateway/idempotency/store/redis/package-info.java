/**
 * The Redis adapter of the store: one Lua script per atomic step (META-INF/scripts), run by SHA on the store's own
 * Lettuce connection (StoreConnection), the record codec, wake-ups over pub/sub, replica acknowledgements and the
 * store's health.
 * <p>
 * Every key and channel name, slot tag and reply conversion is in {@code RedisKeyspace}; the fleet's two per-slot
 * queues (pending processes, lookups of UNCERTAIN records) are one {@code RedisFleetQueue} that
 * {@code RedisProcessQueue} and {@code RedisReconcileQueue} configure with their keys. Both sit on the ground floor
 * of this package: nothing here imports upward. What several scripts share (Redis's clock, the wake-up publish,
 * queueing a process, writing a vanished record anew, an operator's refusal, a slot's unsettled counts) is written once
 * under META-INF/scripts/lib and included by name ({@code LuaScripts}): Redis still runs one script per step.
 * <p>
 * May import store, background and the rules below it (scope, record, fingerprint, encryption) and operator's
 * RecordInspector it implements; never the filter.
 */
package dev.retrysafe.gateway.idempotency.store.redis;
