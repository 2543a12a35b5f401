package dev.retrysafe.gateway.support;

import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;

/** String keys and byte values: the template the store's auto-configuration builds, for tests that talk to Redis. */
public final class BytesTemplate {

    private BytesTemplate() {
    }

    public static ReactiveRedisTemplate<String, byte[]> of(ReactiveRedisConnectionFactory connections) {
        return new ReactiveRedisTemplate<>(connections, RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray())
                .key(RedisSerializer.string()).hashKey(RedisSerializer.string()).build());
    }
}
