package dev.retrysafe.gateway.idempotency.support;

import dev.retrysafe.gateway.idempotency.store.redis.StoreConnection;
import java.time.Duration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;

/**
 * A redis-server of the test's own ({@link RedisProcess}) and a client for it, with the serialization the store's
 * auto-configuration uses (String keys and hash keys, byte[] values): for tests of the Redis side of the store.
 */
public final class RedisClient implements AutoCloseable {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private final RedisProcess redis;
    private final LettuceConnectionFactory connections;
    private final ReactiveRedisTemplate<String, byte[]> bytes;
    private final StoreConnection store;

    private RedisClient(RedisProcess redis) {
        this.redis = redis;
        connections = redis.connect();
        bytes = RedisProcess.bytesTemplate(connections);
        store = StoreConnection.open(connections);
    }

    public static RedisClient start() {
        return new RedisClient(RedisProcess.start());
    }

    /** The connection factory behind {@link #bytes()}, for what needs Lettuce itself (wake-up subscriptions). */
    public LettuceConnectionFactory connections() {
        return connections;
    }

    /** Another started client of the same server, with connections of its own; destroy it when done. */
    public LettuceConnectionFactory connectAgain() {
        return redis.connect();
    }

    /** The store's own connection, as the auto-configuration opens it, on {@link #connections()}'s client. */
    public StoreConnection store() {
        return store;
    }

    public ReactiveRedisTemplate<String, byte[]> bytes() {
        return bytes;
    }

    /** Empties the server: each test starts from nothing. */
    public void flush() {
        bytes.execute(c -> c.serverCommands().flushAll()).blockLast(WAIT);
    }

    /** The Redis server's clock, which the scripts read. */
    public long nowMillis() {
        return bytes.execute(c -> c.serverCommands().time()).next().block(WAIT);
    }

    @Override
    public void close() {
        store.close();
        connections.destroy();
        redis.close();
    }
}
