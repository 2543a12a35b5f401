package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisProcessQueue;
import dev.retrysafe.gateway.idempotency.store.redis.RedisSettleSubscription;
import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import io.lettuce.core.ClientOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;
import reactor.core.publisher.Flux;

/**
 * The store contract on the Redis store: the Lua scripts on a real redis-server, wired as the auto-configuration
 * wires them (Lettuce with the gateway's client options, wake-ups through the pub/sub subscription, no encryption,
 * no replica acks). Time is the Redis server's: tests wait for its TIME to pass a deadline.
 */
class RedisIdempotencyStoreContractTest extends IdempotencyStoreContract {
    static RedisProcess redis;
    static LettuceConnectionFactory connections;
    static ReactiveRedisTemplate<String, byte[]> bytes;
    static SettleSignals signals;
    static RedisSettleSubscription subscription;
    static RedisIdempotencyStore store;
    static RedisProcessQueue processes;

    @BeforeAll
    static void startRedis() {
        redis = RedisProcess.start();
        // As IdempotencyStoreAutoConfiguration's Lettuce customizer: fail fast while disconnected, replies off the
        // connection's thread.
        LettuceClientConfiguration client = LettuceClientConfiguration.builder()
                .clientOptions(ClientOptions.builder()
                        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                        .publishOnScheduler(true)
                        .build())
                .build();
        connections = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redis.port()),
                client);
        connections.afterPropertiesSet();
        connections.start();
        bytes = new ReactiveRedisTemplate<>(connections, RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray())
                .key(RedisSerializer.string())
                .hashKey(RedisSerializer.string())
                .build());
        signals = new SettleSignals();
        store = new RedisIdempotencyStore(bytes, signals, 1024, EncryptionKeys.none(), Optional.empty(), SHORT);
        processes = new RedisProcessQueue(bytes);
        subscription = new RedisSettleSubscription(connections, signals);
        subscription.start();
        subscription.subscribed().block(WAIT);
    }

    @AfterAll
    static void stopRedis() {
        if (subscription != null) {
            subscription.stop();
        }
        if (connections != null) {
            connections.destroy();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Override
    protected IdempotencyStore store() {
        return store;
    }

    @Override
    protected ProcessQueue processes() {
        return processes;
    }

    /**
     * Polls the server's TIME (bounded) until it is past now plus {@code time}. Two milliseconds more: a script's
     * TIME and the PEXPIRE after it can fall on either side of a millisecond tick.
     */
    @Override
    protected void letPass(Duration time) {
        long until = redisMillis() + time.toMillis() + 2;
        Flux.interval(Duration.ZERO, Duration.ofMillis(5)).onBackpressureDrop()
                .concatMap(tick -> bytes.execute(c -> c.serverCommands().time()).next())
                .filter(now -> now >= until)
                .next()
                .block(WAIT.plus(time));
    }

    /**
     * Publishes a marker on the wake-up channel and waits for it to come back: messages reach the subscription in
     * the order Redis published them, so every wake-up published before has been delivered by then.
     */
    @Override
    protected void deliverWakeUps() {
        String marker = "marker-" + UUID.randomUUID();
        try (SettleWaiter waiter = signals.register(marker)) {
            bytes.convertAndSend(RedisIdempotencyStore.SETTLED_CHANNEL, marker.getBytes(StandardCharsets.UTF_8))
                    .block(WAIT);
            waiter.settled().block(WAIT);
        }
    }

    private static long redisMillis() {
        return bytes.execute(c -> c.serverCommands().time()).next().block(WAIT);
    }
}
