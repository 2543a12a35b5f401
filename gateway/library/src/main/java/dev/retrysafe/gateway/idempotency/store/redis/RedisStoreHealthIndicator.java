package dev.retrysafe.gateway.idempotency.store.redis;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import reactor.core.publisher.Mono;

/**
 * The idempotency store as guarded requests see it: one small Lua script (every request step is a script, so this
 * also catches a Redis that answers PING but refuses scripts, e.g. by ACL), within the same {@code store-timeout}
 * a request allows. DOWN says why, and what guarded requests get meanwhile.
 * <p>
 * What the {@link RedisMemoryWatch} found (an evicting master, a memory loss) is shown as details and leaves the
 * status as it is: every instance shares the same Redis, so a DOWN would take the whole fleet out of its load balancer
 * for a Redis that still answers, turning "records may be forgotten" into "nothing is served". The ERROR log and the
 * {@code idempotency.store.memory-lost} counter are what alerts.
 */
public final class RedisStoreHealthIndicator implements ReactiveHealthIndicator {
    private final Supplier<StoreConnection> redis;
    private final Duration timeout;
    private final String whileDown;
    private final Supplier<Map<String, Object>> memory;

    /**
     * @param whileDown what guarded requests get while the store is down, shown in the DOWN details
     * @param memory    what the memory watch found, added to the details (see {@link RedisMemoryWatch#details()})
     */
    public RedisStoreHealthIndicator(Supplier<StoreConnection> redis, Duration timeout, String whileDown,
            Supplier<Map<String, Object>> memory) {
        this.redis = redis;
        this.timeout = timeout;
        this.whileDown = whileDown;
        this.memory = memory;
    }

    @Override
    public Mono<Health> health() {
        return Mono.defer(() -> {
            long start = System.nanoTime();
            return StoreConnection.run(redis, new StoreScripts.Probe())
                    .timeout(timeout)
                    .map(reply -> Health.up()
                            .withDetail("roundTripMillis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
                            .withDetails(memory.get())
                            .build())
                    .onErrorResume(error -> Mono.just(Health.down()
                            .withDetail("error", describe(error))
                            .withDetail("guardedRequests", whileDown)
                            .withDetails(memory.get())
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
