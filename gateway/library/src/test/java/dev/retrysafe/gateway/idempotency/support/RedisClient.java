package dev.retrysafe.gateway.idempotency.support;

import java.time.Duration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;

/**
 * A redis-server of the test's own ({@link RedisProcess}) and a client for it, with the serialization the store's
 * auto-configuration uses (String keys and hash keys, byte[] values): for tests of the Redis side of the store.
 */
public final class RedisClient implements AutoCloseable {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private final RedisProcess redis;
    private final LettuceConnectionFactory connections;
    private final ReactiveRedisTemplate<String, byte[]> bytes;

    private RedisClient(RedisProcess redis) {
        this.redis = redis;
        connections = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redis.port()));
        connections.afterPropertiesSet();
        connections.start();
        bytes = new ReactiveRedisTemplate<>(connections, RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray())
                .key(RedisSerializer.string()).hashKey(RedisSerializer.string()).build());
    }

    public static RedisClient start() {
        return new RedisClient(RedisProcess.start());
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
        connections.destroy();
        redis.close();
    }
}
