package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisProcessQueue;
import dev.retrysafe.gateway.idempotency.store.redis.RedisReconcileQueue;
import dev.retrysafe.gateway.idempotency.store.redis.RedisRecordInspector;
import dev.retrysafe.gateway.idempotency.store.redis.RedisWakeUps;
import dev.retrysafe.gateway.idempotency.store.redis.StoreConnection;
import dev.retrysafe.gateway.idempotency.store.redis.WakeUpChannel;
import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import io.lettuce.core.ClientOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Flux;

/**
 * The store contract on the Redis store: the Lua scripts on a real redis-server that a subclass starts, wired as the
 * auto-configuration wires them (Lettuce with the gateway's client options, wake-ups over pub/sub on the channel the
 * server's version calls for, no encryption, no replica acks). Time is the Redis server's: tests wait for its TIME to
 * pass a deadline.
 */
abstract class RedisStoreContractFixture extends IdempotencyStoreContract {
    static RedisProcess redis;
    static LettuceConnectionFactory connections;
    static ReactiveRedisTemplate<String, byte[]> bytes;
    static RedisWakeUps wakeUps;
    static RedisIdempotencyStore store;
    static RedisProcessQueue processes;
    static RedisReconcileQueue lookups;
    static RedisRecordInspector operator;
    /** A wake-up as the settling scripts publish it. */
    static final RedisScript<Long> PUBLISH = RedisScript.of(
            "return redis.call(ARGV[3] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[1], ARGV[2])", Long.class);

    /** Called by each subclass's {@code @BeforeAll} with the redis-server it runs the contract on. */
    static void startStore(RedisProcess process) {
        redis = process;
        // As IdempotencyStoreAutoConfiguration's Lettuce customizer: fail fast while disconnected, replies off the
        // connection's thread.
        LettuceClientConfiguration client = LettuceClientConfiguration.builder()
                .clientOptions(ClientOptions.builder()
                        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                        .publishOnScheduler(true)
                        .build())
                .build();
        connections = redis.connect(client);
        bytes = RedisProcess.bytesTemplate(connections);
        wakeUps = RedisWakeUps.on(connections, new SettleSignals());
        store = new RedisIdempotencyStore(StoreConnection.open(connections), wakeUps, 1024, EncryptionKeys.none(), Optional.empty(), SHORT);
        processes = new RedisProcessQueue(bytes);
        lookups = new RedisReconcileQueue(bytes, 1024, EncryptionKeys.none(), RedisIdempotencyStore.RELEASED_OWNERS_TTL);
        operator = new RedisRecordInspector(bytes, wakeUps, EncryptionKeys.none());
        wakeUps.start();
        wakeUps.classicSubscribed().block(WAIT);
        wakeUps.channel().block(WAIT);
    }

    @AfterAll
    static void stopRedis() {
        if (wakeUps != null) {
            wakeUps.stop();
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

    @Override
    protected ReconcileQueue lookups() {
        return lookups;
    }

    @Override
    protected String releaseByOperator(IdempotencyScope scope) {
        return operator.release(scope.hash()).block(WAIT);
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
     * Publishes a marker as the scripts publish a wake-up and waits for it to come back: on one redis-server all
     * channels reach this instance over one connection, in the order Redis published them, so every wake-up
     * published before has been delivered by then.
     */
    @Override
    protected void deliverWakeUps() {
        String marker = "marker-" + UUID.randomUUID();
        try (SettleWaiter waiter = wakeUps.register(marker)) {
            waiter.listening().block(WAIT);
            WakeUpChannel channel = wakeUps.channel().block(WAIT);
            bytes.execute(PUBLISH, List.of(), List.of(bytes(channel.channelOf(marker)), bytes(marker),
                    bytes(channel == WakeUpChannel.SHARDED ? "1" : "0"))).blockLast(WAIT);
            waiter.settled().block(WAIT);
        }
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static long redisMillis() {
        return bytes.execute(c -> c.serverCommands().time()).next().block(WAIT);
    }
}
