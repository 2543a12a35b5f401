package dev.retrysafe.gateway.idempotency.store.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Supplier;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConverters;
import reactor.core.publisher.Mono;

/**
 * Runs a store script and then Redis {@code WAIT}, so that a write only counts once enough replicas have it: with
 * asynchronous replication a failover can otherwise promote a replica that never saw an acknowledged reservation,
 * and a retry would then reach the upstream a second time.
 *
 * <p>{@code WAIT} waits for the calling connection's own writes and blocks that connection while it waits, so it
 * cannot share Spring's multiplexed connection: scripts that need acknowledgement run on a few connections of their
 * own, chosen round-robin. Commands pipelined on one of them still work: a {@code WAIT} covers every earlier write of
 * its connection, including another request's, so it can only wait longer, never too little.
 */
public final class ReplicaAcks implements AutoCloseable {
    private final int required;
    private final long timeoutMillis;
    private final List<Mono<StatefulRedisConnection<byte[], byte[]>>> connections = new ArrayList<>();
    private final AtomicReferenceArray<StatefulRedisConnection<byte[], byte[]>> opened;
    private final AtomicInteger next = new AtomicInteger();

    ReplicaAcks(int required, Duration timeout, int connectionCount,
            Supplier<CompletionStage<StatefulRedisConnection<byte[], byte[]>>> connect) {
        if (required < 1) {
            throw new IllegalArgumentException("replica acknowledgements must be at least 1");
        }
        this.required = required;
        this.timeoutMillis = Math.max(1, timeout.toMillis());
        int count = Math.max(1, connectionCount);
        this.opened = new AtomicReferenceArray<>(count);
        for (int i = 0; i < count; i++) {
            int slot = i;
            // Connected on first use, so a Redis that is down at start-up delays protection, not the start; a failed
            // attempt is not cached, the next request tries again.
            connections.add(Mono.fromCompletionStage(connect).doOnNext(c -> opened.set(slot, c))
                    .cache(c -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO));
        }
    }

    /**
     * Acknowledgements on the Redis that {@code connections} talks to: standalone, or the master that Sentinel
     * names (Lettuce asks Sentinel again when it reconnects after a failover).
     *
     * @throws IllegalStateException for Redis Cluster, where {@code WAIT} would have to follow each record's slot to
     *                               its master: refused rather than silently waiting on the wrong node
     */
    public static ReplicaAcks on(LettuceConnectionFactory connections, int required, Duration timeout,
            int connectionCount) {
        if (connections.isClusterAware()) {
            throw new IllegalStateException("idempotency.replica-acks is not available with Redis Cluster (WAIT is "
                    + "not routed to the master of a record's slot); set it to 0 or use Sentinel. See docs/scaling.md, "
                    + "'What a failover can lose'.");
        }
        RedisURI uri = uriOf(connections);
        return new ReplicaAcks(required, timeout, connectionCount,
                () -> ((RedisClient) connections.getRequiredNativeClient()).connectAsync(ByteArrayCodec.INSTANCE, uri));
    }

    /** Runs the script call, then waits (bounded) for the replicas to acknowledge what it wrote. */
    <R> Mono<Acknowledged<R>> run(ScriptCall<R> call) {
        LuaScript script = call.script();
        byte[][] keys = call.keys().stream().map(key -> key.getBytes(StandardCharsets.UTF_8)).toArray(byte[][]::new);
        byte[][] values = call.args().toArray(byte[][]::new);
        return connection().flatMap(connection -> {
            RedisAsyncCommands<byte[], byte[]> commands = connection.async();
            return acknowledged(call, commands.evalsha(script.sha1(), script.output(), keys, values), commands)
                    .onErrorResume(RedisNoScriptException.class, e -> acknowledged(call,
                            commands.eval(script.body(), script.output(), keys, values), commands));
        });
    }

    /**
     * The next connection round-robin (connected on first use), skipping any that is reconnecting: after a failover
     * each one finds the new master on its own schedule, and a request only fails when none is connected.
     */
    private Mono<StatefulRedisConnection<byte[], byte[]>> connection() {
        int start = Math.floorMod(next.getAndIncrement(), connections.size());
        StatefulRedisConnection<byte[], byte[]> preferred = opened.get(start);
        if (preferred == null || preferred.isOpen()) {
            return connections.get(start);
        }
        for (int i = 1; i < connections.size(); i++) {
            StatefulRedisConnection<byte[], byte[]> other = opened.get((start + i) % connections.size());
            if (other != null && other.isOpen()) {
                return Mono.just(other);
            }
        }
        return connections.get(start);
    }

    private <R> Mono<Acknowledged<R>> acknowledged(ScriptCall<R> call, RedisFuture<Object> reply,
            RedisAsyncCommands<byte[], byte[]> commands) {
        // Pipelined: WAIT is sent right behind the script, one round trip for both.
        RedisFuture<Long> acks = commands.waitForReplication(required, timeoutMillis);
        return Mono.fromCompletionStage(reply).zipWith(Mono.fromCompletionStage(acks),
                (value, replicas) -> new Acknowledged<>(call.reply(value), replicas, replicas >= required));
    }

    int required() {
        return required;
    }

    long timeoutMillis() {
        return timeoutMillis;
    }

    @Override
    public void close() {
        for (int i = 0; i < opened.length(); i++) {
            StatefulRedisConnection<byte[], byte[]> connection = opened.getAndSet(i, null);
            if (connection != null) {
                connection.closeAsync();
            }
        }
    }

    /** A script's reply and how many replicas had its writes when {@code WAIT} returned. */
    record Acknowledged<R>(R reply, long replicas, boolean enough) {
    }

    /** The Redis (standalone, or Sentinel's master by name) of Spring's client, with its TLS, timeout and name. */
    static RedisURI uriOf(LettuceConnectionFactory connections) {
        LettuceClientConfiguration client = connections.getClientConfiguration();
        RedisURI uri;
        if (connections.isRedisSentinelAware()) {
            uri = LettuceConverters.sentinelConfigurationToRedisURI(connections.getSentinelConfiguration());
            uri.setDatabase(connections.getSentinelConfiguration().getDatabase());
        } else {
            RedisStandaloneConfiguration standalone = connections.getStandaloneConfiguration();
            RedisURI.Builder builder = RedisURI.builder().withHost(standalone.getHostName())
                    .withPort(standalone.getPort()).withDatabase(standalone.getDatabase());
            char[] password = standalone.getPassword().toOptional().orElse(null);
            if (standalone.getUsername() != null && password != null) {
                builder.withAuthentication(standalone.getUsername(), password);
            } else if (password != null) {
                builder.withPassword(password);
            }
            uri = builder.build();
        }
        uri.setSsl(client.isUseSsl());
        uri.setVerifyPeer(client.getVerifyMode());
        uri.setStartTls(client.isStartTls());
        uri.setTimeout(client.getCommandTimeout());
        client.getClientName().ifPresent(uri::setClientName);
        return uri;
    }
}
