package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.SetArgs;
import io.lettuce.core.TrackingArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.push.PushMessage;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.StringCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Replays answered from this instance's memory ({@code idempotency.store.near-cache.*}): a settled record does not
 * change until it expires or is settled again, and Redis says when it does. On a connection of its own, opened from
 * the store's Lettuce client, it turns on {@code CLIENT TRACKING} (RESP3 pushes) and reads each record it keeps there
 * ({@code HMGET} and {@code PTTL}), after a replay Redis answered: first writes pay nothing. Redis then pushes an
 * invalidation at any change of that record (an operator's release, a process end, an expiry, a flush), and the copy is
 * dropped. Every {@code maxStaleness/4} a fence ({@code CLIENT ID}, which also tells a reconnected connection) goes out
 * on the same connection; a copy is served only while one sent at most {@code maxStaleness} ago has been answered
 * ({@link NearCacheEntries}), so what it serves is never more than that behind Redis.
 *
 * <p>It turns itself off, with one WARN, where Redis cannot keep that promise: a Redis Cluster (a copy read from one
 * master says nothing once its slot moves), or a Redis that does not report a change of a key it read (RESP2, a
 * refused {@code CLIENT}: a probe key, read then written, whose invalidation must arrive within
 * {@link #PROBE_WAIT}). Replays then go to Redis as without it. A lost connection drops every copy until tracking is
 * on again.
 */
public final class NearCache implements SmartLifecycle, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(NearCache.class);
    static final Duration PROBE_WAIT = Duration.ofSeconds(2);
    static final Duration TRY_AGAIN_AFTER = Duration.ofSeconds(1);
    /** After Redis refused: it may be upgraded or failed over to one that does not. */
    static final Duration REFUSED_TRY_AGAIN_AFTER = Duration.ofSeconds(30);
    /** Fills on their way at once, at most: a burst of first replays does not queue reads without end. */
    static final int MAX_FILLS = 64;
    private static final byte[][] FIELDS = RecordFill.FIELDS.stream().map(NearCache::bytes).toArray(byte[][]::new);

    private final LettuceConnectionFactory factory;
    private final NearCacheEntries entries;
    private final Duration tick;
    private final Set<String> filling = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean fenceOut = new AtomicBoolean();
    private final String instance = UUID.randomUUID().toString();
    private volatile StatefulRedisConnection<byte[], byte[]> connection;
    private volatile long trackedId = -1;
    private volatile String probeKey = "";
    private volatile CompletableFuture<Void> probeSeen = new CompletableFuture<>();
    private volatile boolean refused;
    private volatile boolean off;
    private volatile ScheduledExecutorService thread;
    /** On the cache's thread only. */
    private long nextAttempt = System.nanoTime();

    public NearCache(LettuceConnectionFactory factory, long maxEntries, long maxBytes, Duration maxStaleness) {
        this.factory = factory;
        this.entries = new NearCacheEntries(maxEntries, maxBytes, maxStaleness, System::nanoTime);
        this.tick = Duration.ofNanos(Math.max(Duration.ofMillis(10).toNanos(), maxStaleness.toNanos() / 4));
    }

    /** The stored record for a replay of {@code request}, when a copy may be served; else empty: ask Redis. */
    Optional<IdempotencyRecord> replay(String recordKey, Fingerprints request) {
        return entries.replay(recordKey, request);
    }

    /**
     * Reads the record on the tracking connection to keep it, after Redis answered a replay of it (at most
     * {@link #MAX_FILLS} at once; one per key). {@code record} reads the {@link RecordFill#FIELDS}.
     */
    void fill(String recordKey, Function<List<byte[]>, Optional<IdempotencyRecord>> record) {
        StatefulRedisConnection<byte[], byte[]> open = connection;
        if (open == null || !entries.tracked() || filling.size() >= MAX_FILLS || !filling.add(recordKey)) {
            return;
        }
        NearCacheEntries.Ticket ticket = entries.ticket(recordKey);
        RedisAsyncCommands<byte[], byte[]> commands = open.async();
        byte[] key = bytes(recordKey);
        CompletableFuture<List<KeyValue<byte[], byte[]>>> values = commands.hmget(key, FIELDS).toCompletableFuture();
        CompletableFuture<Long> ttl = commands.pttl(key).toCompletableFuture();
        values.thenCombine(ttl, (fields, millis) -> {
            List<byte[]> read = new ArrayList<>(fields.size());
            fields.forEach(field -> read.add(field.getValueOrElse(null)));
            record.apply(read).ifPresent(settled -> entries.keep(ticket, settled, millis));
            return null;
        }).whenComplete((done, error) -> filling.remove(recordKey));
    }

    /** This instance changed the record: its copy goes now, not when Redis's push arrives. */
    void changed(String recordKey) {
        entries.invalidated(recordKey);
    }

    /** Whether copies are served now: tracked, and fenced within the bound. */
    public boolean serving() {
        return entries.serving();
    }

    /** Whether Redis refused to report changes (RESP2, {@code CLIENT} refused) or it is a Cluster: replays go there. */
    public boolean refused() {
        return refused || off;
    }

    /** Copies held. */
    public long size() {
        return entries.size();
    }

    private void tick() {
        try {
            StatefulRedisConnection<byte[], byte[]> open = connection;
            if (off) {
                return;
            }
            if (open == null || !entries.tracked()) {
                if (System.nanoTime() - nextAttempt >= 0) {
                    nextAttempt = System.nanoTime() + TRY_AGAIN_AFTER.toNanos();
                    track(open != null ? open : open());
                }
                return;
            }
            fence(open);
        } catch (RuntimeException | Error unexpected) {
            entries.untracked();
            log.debug("Near cache: {}", unexpected.toString());
        }
    }

    private StatefulRedisConnection<byte[], byte[]> open() {
        AbstractRedisClient client = factory.getRequiredNativeClient();
        if (!(client instanceof RedisClient redis)) {
            off = true;
            log.warn("idempotency.store.near-cache is off: on a Redis Cluster a copy read from one master says "
                    + "nothing once its slot moves, so replays are read from Redis");
            return null;
        }
        StatefulRedisConnection<byte[], byte[]> opened = redis.connect(ByteArrayCodec.INSTANCE);
        opened.addListener(this::pushed);
        opened.addListener(new RedisConnectionStateListener() {
            @Override
            public void onRedisDisconnected(RedisChannelHandler<?, ?> handler) {
                entries.untracked();
            }
        });
        connection = opened;
        return opened;
    }

    private void pushed(PushMessage message) {
        if (!"invalidate".equals(message.getType())) {
            return;
        }
        List<Object> content = message.getContent(StringCodec.UTF8::decodeKey);
        if (content.size() < 2 || content.get(1) == null) {
            // A flush (FLUSHALL, FLUSHDB), or tracking's own table overflowing its memory: everything may be gone.
            entries.invalidatedAll();
            return;
        }
        for (Object key : (List<?>) content.get(1)) {
            String name = String.valueOf(key);
            entries.invalidated(name);
            if (name.equals(probeKey)) {
                probeSeen.complete(null);
            }
        }
    }

    /** Tracking on, and proved: the probe key read, written, and its invalidation received. */
    private void track(StatefulRedisConnection<byte[], byte[]> open) {
        if (open == null) {
            return;
        }
        entries.untracked();
        RedisAsyncCommands<byte[], byte[]> commands = open.async();
        try {
            long id = await(commands.clientId().toCompletableFuture(), PROBE_WAIT);
            await(commands.clientTracking(TrackingArgs.Builder.enabled()).toCompletableFuture(), PROBE_WAIT);
            CompletableFuture<Void> seen = new CompletableFuture<>();
            probeSeen = seen;
            probeKey = RedisKeyspace.nearCacheProbeKey(instance);
            byte[] probe = bytes(probeKey);
            await(commands.get(probe).toCompletableFuture(), PROBE_WAIT);
            await(commands.set(probe, bytes("1"), SetArgs.Builder.px(60_000)).toCompletableFuture(), PROBE_WAIT);
            try {
                await(seen, PROBE_WAIT);
            } catch (TimeoutException silent) {
                refuse("Redis did not report the change of a key this connection read within " + PROBE_WAIT
                        + " (a RESP2 connection, or tracking turned off)");
                return;
            }
            trackedId = id;
            entries.trackedFromNow();
            if (refused) {
                log.info("idempotency.store.near-cache serves replays again: Redis reports changes");
            }
            refused = false;
            fence(open);
        } catch (RedisCommandExecutionException refusal) {
            refuse("Redis refused " + refusal.getMessage());
        } catch (TimeoutException | RuntimeException unreachable) {
            // Not reachable now (down, failing over, stalled): Lettuce reconnects, tracking is asked for again.
            log.debug("Near cache: tracking not on yet: {}", unreachable.toString());
        }
    }

    private void refuse(String why) {
        entries.untracked();
        nextAttempt = System.nanoTime() + REFUSED_TRY_AGAIN_AFTER.toNanos();
        if (!refused) {
            refused = true;
            log.warn("idempotency.store.near-cache does not serve replays, which are read from Redis: {}", why);
        }
    }

    /** A fence, unless one is out: its answer, or the connection's loss, comes first. */
    private void fence(StatefulRedisConnection<byte[], byte[]> open) {
        if (!fenceOut.compareAndSet(false, true)) {
            return;
        }
        long sentAt = System.nanoTime();
        long epoch = entries.epoch();
        long id = trackedId;
        open.async().clientId().whenComplete((answer, error) -> {
            fenceOut.set(false);
            if (error == null && answer == id) {
                entries.fenced(sentAt, epoch);
            } else if (error == null) {
                // Another connection answered: Lettuce reconnected it, and a new connection is not tracked.
                entries.untracked();
            }
        });
    }

    private static <T> T await(CompletableFuture<T> reply, Duration wait) throws TimeoutException {
        try {
            return reply.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", interrupted);
        } catch (java.util.concurrent.ExecutionException failed) {
            if (failed.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw new IllegalStateException(failed.getCause());
        }
    }

    @Override
    public void start() {
        ScheduledExecutorService started = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread named = new Thread(runnable, "idempotency-near-cache");
            named.setDaemon(true);
            return named;
        });
        thread = started;
        started.scheduleWithFixedDelay(this::tick, 0, tick.toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void stop() {
        ScheduledExecutorService running = thread;
        thread = null;
        if (running != null) {
            running.shutdownNow();
        }
        entries.untracked();
        StatefulRedisConnection<byte[], byte[]> open = connection;
        connection = null;
        if (open != null) {
            open.close();
        }
    }

    @Override
    public boolean isRunning() {
        return thread != null;
    }

    /** Before the store's connections close ({@link PreopenedConnections}), after they open. */
    @Override
    public int getPhase() {
        return SmartLifecycle.DEFAULT_PHASE - 4000;
    }

    @Override
    public void close() {
        stop();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
