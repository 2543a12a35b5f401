package dev.retrysafe.gateway.idempotency.store.redis;

import java.util.Map;

/**
 * Startup refused: a Redis master whose {@code maxmemory-policy} evicts keys would silently forget idempotency
 * records, and each forgotten record lets a duplicate through. The {@code volatile-*} policies count: every record
 * has a TTL. Shown in one screen by the settings' failure analyzer.
 */
public final class EvictingRedis extends RuntimeException {
    private final Map<String, String> policies;

    /** @param policies master name to its evicting {@code maxmemory-policy} */
    EvictingRedis(Map<String, String> policies) {
        super("Redis evicts keys: " + policies);
        this.policies = Map.copyOf(policies);
    }

    public Map<String, String> policies() {
        return policies;
    }
}
