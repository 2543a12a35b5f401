package dev.retrysafe.gateway.idempotency.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.KeyValue;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.reactive.RedisClusterReactiveCommands;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Function;
import java.util.function.Supplier;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * The store's own Lettuce connection, opened once and kept: byte-array keys and values, its scripts by SHA. Each call
 * is one command written on it, with nothing looked up or opened on the way (Spring Data's template asks its factory
 * for a connection per call, under the factory's lock). Opened from the Lettuce client Spring's factory built from
 * {@code spring.data.redis.*}, so it has that client's address (standalone, Sentinel's master, or a Cluster's
 * masters by slot), credentials, TLS, client name, options and resources, including the {@link RedisLinks} a
 * Sentinel switch cuts. Lettuce reconnects it by itself; it is closed with the application.
 *
 * <p>On one Redis (standalone, Sentinel) its writes are coalesced ({@code idempotency.store.coalesce-writes}):
 * commands are queued without a flush each, and one flush, on a thread of Lettuce's, sends every command queued by
 * then in one write. Concurrent requests' calls then share a system call in the gateway and a read in Redis
 * (measured: about 14% less CPU per first write on the whole machine, docs/benchmarks.md). A command queued when the
 * connection drops is failed by Lettuce at once, never sent later (the client's REJECT_COMMANDS). Not on a Cluster:
 * Lettuce re-sends a redirected command itself, where no flush of ours would follow it.
 */
public final class StoreConnection implements AutoCloseable {
    private final StatefulConnection<byte[], byte[]> connection;
    /** Standalone, Sentinel's master or a Cluster's masters by slot: the commands all three have. */
    private final RedisClusterReactiveCommands<byte[], byte[]> commands;
    private final boolean cluster;
    /** Where queued commands are flushed; null: each command is flushed as it is written (Lettuce's default). */
    private final Executor flusher;
    private final AtomicBoolean flushScheduled = new AtomicBoolean();
    private final Runnable flush = this::flush;

    private StoreConnection(StatefulConnection<byte[], byte[]> connection,
            RedisClusterReactiveCommands<byte[], byte[]> commands, boolean cluster, Executor flusher) {
        this.connection = connection;
        this.commands = commands;
        this.cluster = cluster;
        this.flusher = flusher;
        if (flusher != null) {
            connection.setAutoFlushCommands(false);
        }
    }

    /**
     * Opens the connection on the factory's client, waiting for it (bounded by Lettuce's connect timeout): never on
     * a request's thread ({@link PreopenedConnections} opens it in the background).
     */
    public static StoreConnection open(LettuceConnectionFactory factory) {
        return open(factory, true);
    }

    /** @param coalesceWrites whether to coalesce its writes (one Redis only; a Cluster's are never) */
    public static StoreConnection open(LettuceConnectionFactory factory, boolean coalesceWrites) {
        AbstractRedisClient client = factory.getRequiredNativeClient();
        if (client instanceof RedisClusterClient clusterClient) {
            StatefulRedisClusterConnection<byte[], byte[]> opened = clusterClient.connect(ByteArrayCodec.INSTANCE);
            return new StoreConnection(opened, opened.reactive(), true, null);
        }
        // The client Spring built for a standalone Redis or Sentinel carries its address (Sentinel: asked again at
        // each reconnection) with the credentials, TLS and client name.
        StatefulRedisConnection<byte[], byte[]> opened = ((RedisClient) client).connect(ByteArrayCodec.INSTANCE);
        return new StoreConnection(opened, opened.reactive(), false,
                coalesceWrites ? client.getResources().eventExecutorGroup().next() : null);
    }

    /** Whether it talks to a Redis Cluster (commands routed by their first key's slot). */
    public boolean cluster() {
        return cluster;
    }

    boolean isOpen() {
        return connection.isOpen();
    }

    /**
     * Runs {@code script} by its SHA. A master that does not hold it (restarted, failed over, flushed: on a Cluster
     * any master, each with its own script cache) answers {@code NOSCRIPT} without running anything; the script is
     * then sent once with its body, on the same keys so to the same master, which also keeps it for the next call.
     * The reply is read by name ({@link ScriptCall#reply}).
     */
    <R> Mono<R> run(ScriptCall<R> call) {
        LuaScript script = call.script();
        byte[][] keyBytes = call.keys().stream().map(StoreConnection::bytes).toArray(byte[][]::new);
        byte[][] values = call.args().toArray(byte[][]::new);
        return written(commands.<Object>evalsha(script.sha1(), script.output(), keyBytes, values).next(), call::reply)
                .onErrorResume(RedisNoScriptException.class, noScript -> written(
                        commands.<Object>eval(script.body(), script.output(), keyBytes, values).next(), call::reply));
    }

    /** Runs the call on the connection {@code connection} gives; one not open yet: that refusal, as an error signal. */
    static <R> Mono<R> run(Supplier<StoreConnection> connection, ScriptCall<R> call) {
        return on(connection, open -> open.run(call));
    }

    /** A command on the connection {@code connection} gives; one not open yet: that refusal, as an error signal. */
    static <R> Mono<R> on(Supplier<StoreConnection> connection, Function<StoreConnection, Mono<R>> command) {
        return Mono.fromSupplier(connection).flatMap(command);
    }

    Mono<byte[]> get(String key) {
        return written(commands.get(bytes(key)));
    }

    /** SET with a time to live in milliseconds. */
    Mono<Void> set(String key, byte[] value, Duration ttl) {
        return written(commands.set(bytes(key), value, SetArgs.Builder.px(Math.max(1, ttl.toMillis())))).then();
    }

    /** SET with no time to live. */
    Mono<Void> set(String key, byte[] value) {
        return written(commands.set(bytes(key), value)).then();
    }

    /** SET NX with a time to live: whether this call wrote it. */
    Mono<Boolean> setIfAbsent(String key, byte[] value, Duration ttl) {
        return written(commands.set(bytes(key), value, SetArgs.Builder.nx().px(Math.max(1, ttl.toMillis()))))
                .map("OK"::equals)
                .defaultIfEmpty(false);
    }

    Mono<Boolean> exists(String key) {
        return written(commands.exists(bytes(key))).map(count -> count > 0);
    }

    /** HMGET: the fields' values in their order, {@code null} for a missing one (the whole list for no hash). */
    Mono<List<byte[]>> hmget(String key, List<String> fields) {
        byte[][] names = fields.stream().map(StoreConnection::bytes).toArray(byte[][]::new);
        return written(commands.hmget(bytes(key), names).collectList()).map(StoreConnection::values);
    }

    private static List<byte[]> values(List<KeyValue<byte[], byte[]>> fields) {
        List<byte[]> values = new ArrayList<>(fields.size());
        fields.forEach(field -> values.add(field.getValueOrElse(null)));
        return values;
    }

    /** The key's time to live in seconds: -1 without one, -2 when there is no key. */
    Mono<Long> ttlSeconds(String key) {
        return written(commands.ttl(bytes(key)));
    }

    /** The lowest score of a sorted set, empty when it is empty or absent. */
    Mono<Double> lowestScore(String key) {
        return written(commands.zrangeWithScores(bytes(key), 0, 0).next().map(ScoredValue::getScore));
    }

    /**
     * The command, and with coalesced writes a flush after it. Lettuce queues a reactive command when it is
     * subscribed with demand, so it is subscribed here (with the caller's context: a sampled trace's parent) and the
     * flush asked for only after: a flush asked for first could run before the command is queued and leave it
     * there. One flush is pending at a time; a command queued before it runs goes with it.
     */
    private <T> Mono<T> written(Mono<T> command) {
        return flusher == null ? command : written(command, value -> value);
    }

    /** The same, the reply read by {@code reply} where it is received: no operator of its own on the request path. */
    private <T, R> Mono<R> written(Mono<T> command, Function<? super T, R> reply) {
        if (flusher == null) {
            return command.map(reply);
        }
        return Mono.create(sink -> {
            ReplyToSink<T, R> subscriber = new ReplyToSink<>(sink, reply);
            sink.onCancel(subscriber);
            command.subscribe(subscriber);
            if (flushScheduled.compareAndSet(false, true)) {
                flusher.execute(flush);
            }
        });
    }

    /**
     * Hands the command's one reply to the caller's sink, and its completion only when there was no reply. Reactor's
     * {@code MonoSink.success()} called after {@code success(value)} but before the caller asked for the value (a
     * reply that came first, as in a {@code concatMap}) completes the caller empty and drops the value; a
     * subscriber that calls both, as {@code subscribe(value, error, complete)} does, lost replies that way: a
     * claimed fleet-queue slot then got no batch and no next look, and waited a claim lease.
     */
    private static final class ReplyToSink<T, R> implements CoreSubscriber<T>, Disposable {
        private static final AtomicReferenceFieldUpdater<ReplyToSink, Subscription> SUBSCRIPTION =
                AtomicReferenceFieldUpdater.newUpdater(ReplyToSink.class, Subscription.class, "subscription");

        private final MonoSink<R> sink;
        private final Function<? super T, R> reply;
        /** The caller's: a sampled trace's parent reaches Lettuce's tracing. */
        private final Context context;
        private volatile Subscription subscription;
        /** Read and written in the command's signals only, which Reactive Streams serialises. */
        private boolean answered;

        ReplyToSink(MonoSink<R> sink, Function<? super T, R> reply) {
            this.sink = sink;
            this.reply = reply;
            this.context = Context.of(sink.contextView());
        }

        @Override
        public Context currentContext() {
            return context;
        }

        @Override
        public void onSubscribe(Subscription s) {
            if (Operators.setOnce(SUBSCRIPTION, this, s)) {
                s.request(Long.MAX_VALUE);
            }
        }

        @Override
        public void onNext(T value) {
            if (answered) {
                return;
            }
            answered = true;
            R answer;
            try {
                answer = reply.apply(value);
            } catch (RuntimeException e) {
                dispose();
                sink.error(e);
                return;
            }
            sink.success(answer);
        }

        @Override
        public void onError(Throwable e) {
            if (!answered) {
                sink.error(e);
            }
        }

        @Override
        public void onComplete() {
            if (!answered) {
                sink.success();
            }
        }

        @Override
        public void dispose() {
            Operators.terminate(SUBSCRIPTION, this);
        }

        @Override
        public boolean isDisposed() {
            return subscription == Operators.cancelledSubscription();
        }
    }

    private void flush() {
        // Cleared before flushing: a command queued while this flush drains is either taken by it or asks anew.
        flushScheduled.set(false);
        connection.flushCommands();
    }

    /** Where the flushes run, for a test to queue commands from that thread (one flush after all of them). */
    Executor flusher() {
        return flusher;
    }

    @Override
    public void close() {
        connection.close();
    }

    private static byte[] bytes(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }
}
