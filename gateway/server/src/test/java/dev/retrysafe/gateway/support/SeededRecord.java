package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;

/**
 * An UNCERTAIN record written into Redis field by field, as a gateway writes one: for records the test's routes do
 * not write themselves, such as one whose operation is not its route's id, or one of an older format.
 *
 * @param tenant    as the gateway resolves it ({@code header:acme}), {@code ""} for anonymous
 * @param operation what scopes the record: its {@code route} field and its scope hash
 * @param routeId   the route that reserved it ({@code route_id}, with {@code format} 2); null for a record written
 *                  before routes named their operation (format 1: neither field)
 */
public record SeededRecord(String tenant, String operation, @Nullable String routeId, String key, String path) {
    private static final Duration WAIT = Duration.ofSeconds(10);

    /** With a key of its own, so that no other test's record is this one. */
    public static SeededRecord withNewKey(String tenant, String operation, @Nullable String routeId, String path) {
        return new SeededRecord(tenant, operation, routeId, UUID.randomUUID().toString(), path);
    }

    public String scopeHash() {
        return new IdempotencyScope(tenant, operation, new IdempotencyKey(key)).hash();
    }

    /** Writes the record and its entry in the index of UNCERTAIN records (what the operator's list reads). */
    public String writeUncertain(ReactiveRedisConnectionFactory connections) {
        ReactiveRedisTemplate<String, byte[]> redis = BytesTemplate.of(connections);
        String scopeHash = scopeHash();
        long now = System.currentTimeMillis();
        Map<String, byte[]> fields = new LinkedHashMap<>();
        fields.put("state", bytes("UNCERTAIN"));
        fields.put("fingerprint", bytes("0f".repeat(32)));
        fields.put("owner", bytes("seeded-owner"));
        fields.put("reserved_at", bytes(Long.toString(now - 120_000)));
        fields.put("lease_until", bytes(Long.toString(now - 110_000)));
        fields.put("attempts", bytes("1"));
        fields.put("route", bytes(operation));
        if (routeId != null) {
            fields.put("route_id", bytes(routeId));
            fields.put("format", bytes("2"));
        }
        fields.put("tenant", bytes(IdempotencyScope.tenantHash(tenant)));
        fields.put("upstream", bytes("http://127.0.0.1:9"));
        fields.put("method", bytes("POST"));
        fields.put("path", bytes(path));
        fields.put("uncertain_at", bytes(Long.toString(now - 110_000)));
        fields.put("uncertain_reason", bytes("seeded by the test"));
        String recordKey = RedisKeyspace.recordKey(scopeHash);
        // The index key of the record's slot, as UnsettledIndex names it (package-private there).
        String uncertainIndex = "idempotency-uncertain:{" + RedisKeyspace.slotTag(scopeHash) + "}";
        redis.<String, byte[]>opsForHash().putAll(recordKey, fields)
                .then(redis.expire(recordKey, Duration.ofHours(1)))
                .then(redis.opsForZSet().add(uncertainIndex, bytes(scopeHash), now - 110_000))
                .block(WAIT);
        return scopeHash;
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
