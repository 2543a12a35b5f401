package dev.retrysafe.gateway.idempotency.store.redis;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Mono;

/**
 * The idempotency store as guarded requests see it: one small Lua script (every request step is a script, so this
 * also catches a Redis that answers PING but refuses scripts, e.g. by ACL), within the same {@code store-timeout}
 * a request allows. DOWN says why, and what guarded requests get meanwhile.
 */
public final class RedisStoreHealthIndicator implements ReactiveHealthIndicator {
    private static final RedisScript<Long> PROBE = RedisScript.of("return 1", Long.class);

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final Duration timeout;
    private final String whileDown;

    /** @param whileDown what guarded requests get while the store is down, shown in the DOWN details */
    public RedisStoreHealthIndicator(ReactiveRedisTemplate<String, byte[]> redis, Duration timeout, String whileDown) {
        this.redis = redis;
        this.timeout = timeout;
        this.whileDown = whileDown;
    }

    @Override
    public Mono<Health> health() {
        return Mono.defer(() -> {
            long start = System.nanoTime();
            return redis.execute(PROBE, List.of(), List.of()).next()
                    .timeout(timeout)
                    .map(reply -> Health.up()
                            .withDetail("roundTripMillis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
                            .build())
                    .onErrorResume(error -> Mono.just(Health.down()
                            .withDetail("error", describe(error))
                            .withDetail("guardedRequests", whileDown)
                            .build()));
        });
    }

    private String describe(Throwable error) {
        if (error instanceof TimeoutException) {
            return "Redis did not answer within " + timeout.toMillis() + " ms";
        }
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
        return "Redis unreachable: " + message;
    }
}
