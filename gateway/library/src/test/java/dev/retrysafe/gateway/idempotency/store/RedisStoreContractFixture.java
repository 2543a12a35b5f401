package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
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
import org.junit.jupiter.api.AfterAll;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Flux;

/**
 * The store contract on the Redis store: the Lua scripts on a real Redis that a subclass starts (a redis-server here;
 * a Sentinel-managed master or a Cluster in the server's tests), wired as the auto-configuration wires them (the
 * store's own Lettuce connection with the gateway's client options, wake-ups over pub/sub on the channel the servers'
 * version calls for, no encryption, no replica acks). Time is the Redis server's: tests wait for its TIME to pass a
 * deadline.
 */
public abstract class RedisStoreContractFixture extends IdempotencyStoreContract {
    /**
     * As IdempotencyRedisClientAutoConfiguration's Lettuce customizer: fail fast while disconnected, replies off the
     * connection's thread.
     */
    public static final LettuceClientConfiguration AS_THE_GATEWAY = LettuceClientConfiguration.builder()
            .clientOptions(ClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                    .publishOnScheduler(true)
                    .build())
            .build();
    static AutoCloseable redis;
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
        startStore(process.connect(AS_THE_GATEWAY), process);
    }

    /**
     * Called by a subclass's {@code @BeforeAll} with a started factory ({@link #AS_THE_GATEWAY}'s options) on the
     * Redis it runs the contract on, and what stops that Redis.
     */
    public static void startStore(LettuceConnectionFactory factory, AutoCloseable servers) {
        redis = servers;
        connections = factory;
        bytes = RedisProcess.bytesTemplate(connections);
        wakeUps = RedisWakeUps.on(connections, new SettleSignals());
        StoreConnection connection = StoreConnection.open(connections);
        store = new RedisIdempotencyStore(() -> connection, wakeUps, 1024, EncryptionKeys.none(), Optional.empty(),
                SHORT, RedisIdempotencyStore.RELEASED_OWNERS_TTL, Optional.empty());
        processes = new RedisProcessQueue(() -> connection, bytes, connection.cluster());
        lookups = new RedisReconcileQueue(() -> connection, bytes, 1024, EncryptionKeys.none(),
                RedisIdempotencyStore.RELEASED_OWNERS_TTL, SHORT, connection.cluster());
        operator = new RedisRecordInspector(() -> connection, bytes, wakeUps, EncryptionKeys.none(), false,
                RedisIdempotencyStore.RELEASED_OWNERS_TTL);
        wakeUps.start();
        wakeUps.classicSubscribed().block(WAIT);
        wakeUps.channel().block(WAIT);
    }

    @AfterAll
    static void stopRedis() throws Exception {
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
     * Publishes a marker as the scripts publish a wake-up of the test's record and waits for it to come back: the
     * marker is the tag of the record's slot, so it goes on the record's channel (on shard channels, the slot's, from
     * the slot's master), which reaches this instance over one connection in the order Redis published on it; every
     * wake-up of the record published before has been delivered by then.
     */
    @Override
    protected void deliverWakeUps() {
        String marker = RedisKeyspace.slotTag(scope.hash());
        try (SettleWaiter waiter = wakeUps.register(marker)) {
            waiter.listening().block(WAIT);
            WakeUpChannel channel = wakeUps.channel().block(WAIT);
            // A key of the slot: on a Cluster the script runs on the slot's master, which alone may SPUBLISH there.
            bytes.execute(PUBLISH, List.of("marker:{" + marker + "}"), List.of(bytes(channel.channelOf(marker)),
                    bytes(marker), bytes(channel == WakeUpChannel.SHARDED ? "1" : "0"))).blockLast(WAIT);
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
