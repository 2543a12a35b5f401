package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.operator.RecordCounts;
import dev.retrysafe.gateway.idempotency.operator.RecordFilter;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.store.StoredResponseUnreadable;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Supplier;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.ScanOptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Operator access to the Redis records: the index of unsettled records for counts and the operator's queue, SCAN
 * only for what the index does not hold (COMPLETED), scripts for settling.
 */
public final class RedisRecordInspector implements RecordInspector {
    private static final List<String> FIELDS = List.of("state", "fingerprint", "route", "route_id", "tenant",
            "upstream", "attempts", "reserved_at", "lease_until", "completed_at", "status", "uncertain_at",
            "uncertain_reason", "process_id", "process_state", "process_status", "resolved_by", "resolved_reason",
            "method", "path");
    private static final Set<String> UNSETTLED_STATES = Set.of("IN_FLIGHT", "UNCERTAIN");
    /** How many records of each unsettled state a list looks at before its filters: bounds an operator's page. */
    static final int CANDIDATES_PER_STATE = 2_000;

    private final Supplier<StoreConnection> redis;
    /** Spring Data's, for SCAN over every master (COMPLETED records, which no index holds). */
    private final ReactiveRedisTemplate<String, byte[]> template;
    private final RedisWakeUps wakeUps;
    private final StoredResponseCodec codec;
    private final UnsettledIndex index;
    private final Duration releasedOwnersTtl;

    /**
     * @param redis          the store's connection ({@link PreopenedConnections#store()})
     * @param template       Spring Data's, for SCAN and a Cluster's topology
     * @param encryption     the same keys the store uses, to show and write sealed responses
     * @param oneSlotPerCall a Redis Cluster: the index is read by master where Redis allows (7 and later), else one
     *                       slot per call
     * @param releasedOwnersTtl the least time a released record's former owner stays fenced, as the store's
     */
    public RedisRecordInspector(Supplier<StoreConnection> redis, ReactiveRedisTemplate<String, byte[]> template,
            RedisWakeUps wakeUps, EncryptionKeys encryption, boolean oneSlotPerCall, Duration releasedOwnersTtl) {
        this.redis = redis;
        this.template = template;
        this.releasedOwnersTtl = releasedOwnersTtl;
        this.wakeUps = wakeUps;
        this.codec = new StoredResponseCodec(Integer.MAX_VALUE, encryption);
        this.index = new UnsettledIndex(redis, template, oneSlotPerCall);
    }

    @Override
    public Mono<RecordView> find(String scopeHash, boolean includeBody) {
        return view(RedisKeyspace.recordKey(scopeHash), scopeHash, includeBody);
    }

    /**
     * IN_FLIGHT and UNCERTAIN records come from the index of unsettled records (oldest first within a slot, at most
     * {@link #CANDIDATES_PER_STATE} of each state looked at); a filter that asks for COMPLETED ones reads every
     * record (SCAN: operator traffic only).
     */
    @Override
    public Flux<RecordView> list(RecordFilter filter) {
        long now = System.currentTimeMillis();
        Flux<RecordView> candidates = UNSETTLED_STATES.containsAll(filter.states())
                ? index.list(CANDIDATES_PER_STATE)
                        .filter(member -> filter.states().contains(member.state()))
                        // A few lookups at once so that Lettuce pipelines them; the order stays the index's.
                        // Only from the index of its own state: an entry left by a record whose TTL ended must
                        // not list its successor twice (a first write does not clear the other index).
                        .flatMapSequential(member -> view(RedisKeyspace.recordKey(member.scopeHash()),
                                member.scopeHash(), false).filter(v -> v.state().equals(member.state())), 16)
                : template.scan(ScanOptions.scanOptions().match(RedisKeyspace.RECORD_PREFIX + "{*").count(1000)
                                .build())
                        .concatMap(key -> view(key, key.substring(RedisKeyspace.RECORD_PREFIX.length() + 1,
                                key.length() - 1), false));
        return candidates
                .filter(v -> filter.states().contains(v.state()))
                .filter(v -> filter.route().map(r -> r.equals(v.route())).orElse(true))
                .filter(v -> filter.operation().map(o -> o.equals(v.operation())).orElse(true))
                .filter(v -> filter.tenantHash().map(t -> t.equals(v.tenantHash())).orElse(true))
                .filter(v -> !"IN_FLIGHT".equals(v.state()) || v.reservedAt() == null
                        || Instant.parse(v.reservedAt()).toEpochMilli() <= now - filter.inFlightOlderThan().toMillis())
                .take(filter.limit());
    }

    /**
     * IN_FLIGHT, UNCERTAIN, pending, pending processes and the oldest of each from the index, at any store size. COMPLETED is the
     * number of record keys less the unsettled ones: counting keys reads every one (SCAN), so above
     * {@code maxRecords} it is left unknown.
     */
    @Override
    public Mono<RecordCounts> count(Duration pendingAfter, long maxRecords) {
        return index.count(pendingAfter).zipWith(recordKeys(maxRecords), (unsettled, keys) -> new RecordCounts(
                unsettled.inFlight(), unsettled.uncertain(),
                keys.isPresent()
                        ? OptionalLong.of(Math.max(0, keys.getAsLong() - unsettled.inFlight() - unsettled.uncertain()))
                        : OptionalLong.empty(),
                unsettled.pending(), unsettled.processesPending(), unsettled.oldest()));
    }

    private Mono<OptionalLong> recordKeys(long maxRecords) {
        ScanOptions records = ScanOptions.scanOptions().match(RedisKeyspace.RECORD_PREFIX + "{*").count(1000)
                .build();
        return template.scan(records).take(Math.min(maxRecords, Long.MAX_VALUE - 1) + 1).count()
                .map(keys -> keys > maxRecords ? OptionalLong.empty() : OptionalLong.of(keys));
    }

    /**
     * The former owner stays fenced as long as the record would have lived (read from its TTL in the script, so the
     * route's own unsettled-record TTL or uncertain retention, not a gateway-wide guess), at least
     * {@code releasedOwnersTtl}.
     */
    @Override
    public Mono<String> release(String scopeHash) {
        return StoreConnection.run(redis, new StoreScripts.OperatorRelease(RedisKeyspace.recordKey(scopeHash),
                        RedisKeyspace.inFlightKey(scopeHash), RedisKeyspace.uncertainKey(scopeHash),
                        RedisKeyspace.releasedOwnersKey(scopeHash), wakeUps.wakeUp(scopeHash), releasedOwnersTtl))
                .doOnNext(previous -> wakeUps.settledHere(scopeHash));
    }

    @Override
    public Mono<String> complete(String scopeHash, StoredResponse response, Duration retention, String who,
            String why) {
        return StoreConnection.run(redis, new StoreScripts.OperatorComplete(RedisKeyspace.recordKey(scopeHash),
                        RedisKeyspace.inFlightKey(scopeHash), RedisKeyspace.uncertainKey(scopeHash),
                        codec.encode(response, scopeHash), response.status(), retention, who, why,
                        wakeUps.wakeUp(scopeHash)))
                .doOnNext(previous -> wakeUps.settledHere(scopeHash));
    }

    private Mono<RecordView> view(String key, String scopeHash, boolean includeBody) {
        List<String> fields = new ArrayList<>(FIELDS);
        if (includeBody) {
            fields.add("response");
        }
        Mono<List<byte[]>> values = StoreConnection.on(redis, c -> c.hmget(key, fields));
        return values.zipWith(StoreConnection.on(redis, c -> c.ttlSeconds(key)).defaultIfEmpty(-1L))
                .flatMap(both -> {
                    Map<String, byte[]> byName = new HashMap<>();
                    for (int i = 0; i < fields.size(); i++) {
                        if (both.getT1().get(i) != null) {
                            byName.put(fields.get(i), both.getT1().get(i));
                        }
                    }
                    if (!byName.containsKey("state")) {
                        return Mono.empty();
                    }
                    return Mono.just(toView(scopeHash, byName, both.getT2()));
                });
    }

    private RecordView toView(String scopeHash, Map<String, byte[]> f, long ttlSeconds) {
        RecordView.StoredBody body = f.containsKey("response") ? storedBody(f.get("response"), scopeHash) : null;
        // The field "route" holds the operation; "route_id", absent before routes named one, the route itself.
        String operation = text(f, "route");
        String routeId = f.containsKey("route_id") ? text(f, "route_id") : operation;
        return new RecordView(scopeHash, routeId, operation, text(f, "tenant"), text(f, "state"),
                text(f, "fingerprint"), nonEmpty(f, "method"), nonEmpty(f, "path"), text(f, "upstream"),
                number(f, "attempts"), time(f, "reserved_at"),
                time(f, "lease_until"), time(f, "completed_at"), number(f, "status"), time(f, "uncertain_at"),
                text(f, "uncertain_reason"), text(f, "process_id"), text(f, "process_state"),
                text(f, "process_status"), text(f, "resolved_by"), text(f, "resolved_reason"),
                ttlSeconds >= 0 ? ttlSeconds : null, body);
    }

    private RecordView.StoredBody storedBody(byte[] encoded, String scopeHash) {
        StoredResponse stored;
        try {
            stored = codec.decode(encoded, scopeHash);
        } catch (StoredResponseUnreadable e) {
            return new RecordView.StoredBody(e.originalStatus(), List.of(), null, null, false, e.getMessage());
        }
        List<List<String>> headers = stored.headers().stream().map(h -> List.of(h.name(), h.value())).toList();
        String text = utf8(stored.body());
        return new RecordView.StoredBody(stored.status(), headers, text,
                text == null ? Base64.getEncoder().encodeToString(stored.body()) : null, stored.bodyOmitted(), null);
    }

    private static String text(Map<String, byte[]> fields, String name) {
        byte[] value = fields.get(name);
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    /** A field written empty when it was not known (a record reserved without its request line). */
    private static String nonEmpty(Map<String, byte[]> fields, String name) {
        String value = text(fields, name);
        return value == null || value.isEmpty() ? null : value;
    }

    private static Integer number(Map<String, byte[]> fields, String name) {
        String value = text(fields, name);
        return value == null ? null : Integer.valueOf(value);
    }

    private static String time(Map<String, byte[]> fields, String name) {
        String value = text(fields, name);
        return value == null ? null : Instant.ofEpochMilli(Long.parseLong(value)).toString();
    }

    private static String utf8(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException notText) {
            return null;
        }
    }
}
