/**
 * The Redis adapter of the store: one Lua script per atomic step (META-INF/scripts), run by SHA on the store's own
 * Lettuce connection (StoreConnection), the record codec, wake-ups over pub/sub, replica acknowledgements and the
 * store's health.
 * <p>
 * Every script's call is a record in {@code StoreScripts}: its keys, arguments and reply by name, as the script's
 * header names them on its {@code -- keys:}, {@code -- argv:} and {@code -- reply:} lines (ScriptContractTest holds
 * the two sides together). Redis is reached four ways, each for what only it does:
 * <ul>
 * <li>{@code StoreConnection}: every script and every command on a key (the request path, the fleet queues, the
 * index of unsettled records, the operator's settlements and reads, the memory markers, the health probe);</li>
 * <li>{@code ReplicaAcks}' own connections, where {@code idempotency.replica-acks} is set: {@code WAIT} counts the
 * writes of the connection it is sent on, so a step and its {@code WAIT} share one that nothing else writes on;</li>
 * <li>Spring Data, for what addresses no single key: through the one template ({@code PreopenedConnections.template()})
 * SCAN over every master (the operator's COMPLETED records, the index's one-time backfill), a Cluster's topology (the
 * index read by master), INFO and CONFIG of each node ({@code RedisMasters}); through its factory's connection the
 * INFO of every node that picks the wake-up channel ({@code WakeUpChannel});</li>
 * <li>pub/sub for wake-ups: Spring Data's listener container for the classic channel ({@code RedisSettleSubscription})
 * and Lettuce's own for the shard channels ({@code ShardSubscriptions}).</li>
 * </ul>
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
