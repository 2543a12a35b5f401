package dev.retrysafe.gateway.idempotency.store.redis;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.dao.DataAccessException;
import org.springframework.data.redis.RedisConnectionFailureException;
import org.springframework.data.redis.connection.ReactiveRedisClusterConnection;
import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The store's connections, opened at startup and never on a request's thread: the store's own Lettuce connection
 * ({@link StoreConnection}, on which every script and every per-key command runs, the request path's, the fleet
 * queues', the operator's and the health check's) and Spring Data's shared one (under the one template,
 * {@link #template()}, for what addresses no single key: SCAN over every master, a Cluster's topology, INFO and
 * CONFIG of a node). Spring Data's Lettuce
 * factory opens its shared connection on first use, synchronously and under its lock, bounded only by Lettuce's
 * connect and command timeouts (60 s by default): the first request after startup, and every request queued behind
 * the lock, would wait that long on a Redis that accepts and does not answer, and block the event loop that asked.
 * Here both are opened in the background from startup on, tried again every second while Redis cannot be reached,
 * and until they are open asking for one fails at once (the request gets its 503). Once open they are Lettuce's own:
 * it reconnects them in the background, and while one is away its commands are rejected at once. The store's
 * connection is closed with the application ({@link #close()}).
 */
public final class PreopenedConnections implements SmartLifecycle, AutoCloseable {
    static final Duration TRY_AGAIN_AFTER = Duration.ofSeconds(1);
    /**
     * How long startup waits for the first attempt (Lettuce's default connect timeout): a reachable Redis is open
     * before the server takes requests, one that is down fails at once, one that hangs costs startup this much.
     */
    static final Duration FIRST_ATTEMPT_WAIT = Duration.ofSeconds(10);
    private static final Logger log = LoggerFactory.getLogger(PreopenedConnections.class);

    private final ReactiveRedisConnectionFactory connections;
    /**
     * The one Spring Data template (SCAN, topology, a node's INFO and CONFIG: see the package's description), on the
     * gated factory: built once, shared.
     */
    private final ReactiveRedisTemplate<String, byte[]> template;
    /** Null without Lettuce's factory: there is no store connection of its own to open (nor a Redis store). */
    private final Supplier<StoreConnection> openStore;
    private volatile boolean sharedOpen;
    private volatile StoreConnection store;
    private volatile boolean open;
    private volatile boolean closed;
    /** Why the last attempt failed: a refused request says it (an untrusted certificate, a wrong password). */
    private volatile RuntimeException lastFailure;
    private volatile Thread opener;
    /** Counted down by the first attempt after each start. */
    private volatile CountDownLatch firstAttempt = new CountDownLatch(1);
    /** Whether nothing needs opening before the first call: how {@link #stop()} leaves it for the next start. */
    private final boolean sharedNeedsNoOpening;

    /** @param coalesceWrites whether the store's connection coalesces its writes ({@link StoreConnection}) */
    public PreopenedConnections(ReactiveRedisConnectionFactory connections, boolean coalesceWrites) {
        this.connections = connections;
        this.openStore = connections instanceof LettuceConnectionFactory lettuce
                ? () -> StoreConnection.open(lettuce, coalesceWrites)
                : null;
        // Without a shared Lettuce connection each call opens its own, asynchronously: nothing to open first.
        this.sharedNeedsNoOpening = !(connections instanceof LettuceConnectionFactory lettuce)
                || !lettuce.getShareNativeConnection();
        this.sharedOpen = sharedNeedsNoOpening;
        this.open = sharedOpen && openStore == null;
        this.template = new ReactiveRedisTemplate<>(gated, RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray())
                .key(RedisSerializer.string())
                .hashKey(RedisSerializer.string())
                .build());
    }

    /** Whether the connections have been opened (and from then on are Lettuce's to keep). */
    public boolean isOpen() {
        return open;
    }

    /**
     * The store's own connection once the connections are open; until then a {@link NotOpenYet} (the call is never
     * sent). A volatile read: nothing is looked up or opened per call.
     */
    public StoreConnection store() {
        if (openStore == null) {
            throw new IllegalStateException("The idempotency store's own connection needs Lettuce's connection "
                    + "factory");
        }
        requireOpen();
        return store;
    }

    /**
     * The factory's connections once the shared one is open; until then asking fails at once. (Not a bean of its own
     * type: the application's factory stays the one factory.)
     */
    public ReactiveRedisConnectionFactory connections() {
        return gated;
    }

    /** String keys, byte-array values, over {@link #connections()}: the one template, asking fails until open. */
    public ReactiveRedisTemplate<String, byte[]> template() {
        return template;
    }

    private final ReactiveRedisConnectionFactory gated = new ReactiveRedisConnectionFactory() {
        @Override
        public ReactiveRedisConnection getReactiveConnection() {
            requireOpen();
            return connections.getReactiveConnection();
        }

        @Override
        public ReactiveRedisClusterConnection getReactiveClusterConnection() {
            requireOpen();
            return connections.getReactiveClusterConnection();
        }

        @Override
        public DataAccessException translateExceptionIfPossible(RuntimeException ex) {
            return connections.translateExceptionIfPossible(ex);
        }
    };

    private void requireOpen() {
        if (!open) {
            RuntimeException failure = lastFailure;
            throw failure == null
                    ? new NotOpenYet("The Redis connection is not open yet (it is being opened "
                            + "in the background since startup)")
                    : new NotOpenYet("The Redis connection could not be opened yet (tried again "
                            + "every " + TRY_AGAIN_AFTER.toSeconds() + " s): " + rootCause(failure), failure);
        }
    }

    @Override
    public void start() {
        if (open || opener != null) {
            return;
        }
        CountDownLatch attempted = new CountDownLatch(1);
        firstAttempt = attempted;
        Thread thread = new Thread(this::openUntilOpen, "idempotency-redis-opener");
        thread.setDaemon(true);
        opener = thread;
        thread.start();
        try {
            attempted.await(FIRST_ATTEMPT_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Before the web server takes requests (it starts at DEFAULT_PHASE - 2048), after the factory (started early). */
    @Override
    public int getPhase() {
        return DEFAULT_PHASE - 4096;
    }

    private void openUntilOpen() {
        boolean warned = false;
        while (!open && opener == Thread.currentThread()) {
            try {
                if (!sharedOpen) {
                    connections.getReactiveConnection().closeLater().subscribe();
                    sharedOpen = true;
                }
                if (openStore != null && store == null) {
                    keep(openStore.get());
                }
                if (!markOpen()) {
                    return;
                }
                log.info("Redis connections of the idempotency store open");
                firstAttempt.countDown();
            } catch (RuntimeException e) {
                lastFailure = e;
                firstAttempt.countDown();
                if (!warned) {
                    log.warn("Redis cannot be reached yet ({}); guarded requests get 503 until it can, trying again "
                            + "every {} s", e.toString(), TRY_AGAIN_AFTER.toSeconds());
                    warned = true;
                }
                try {
                    Thread.sleep(TRY_AGAIN_AFTER.toMillis());
                } catch (InterruptedException interrupted) {
                    return;
                }
            }
        }
    }

    /** Kept, unless the application was closed or stopped while it was being opened. */
    private synchronized void keep(StoreConnection opened) {
        if (closed || opener != Thread.currentThread()) {
            opened.close();
            throw new IllegalStateException("closed while opening");
        }
        store = opened;
    }

    /** Open, unless stopped meanwhile (this opener is no longer the one). */
    private synchronized boolean markOpen() {
        if (opener != Thread.currentThread()) {
            return false;
        }
        open = true;
        return true;
    }

    /** Asked before the connections were open: the call was never sent. */
    static final class NotOpenYet extends RedisConnectionFailureException {
        NotOpenYet(String message) {
            super(message);
        }

        NotOpenYet(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static String rootCause(Throwable error) {
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.toString();
    }

    /**
     * Stops opening, and closes the store's connection: Spring's factory stops too (a paused test context, a
     * restarted application context), and the client the connection came from with it. The next {@link #start()}
     * opens both anew from the factory's new client; until then a call is refused unsent.
     */
    @Override
    public void stop() {
        Thread thread = opener;
        opener = null;
        if (thread != null) {
            thread.interrupt();
        }
        StoreConnection opened;
        synchronized (this) {
            opened = store;
            store = null;
            open = false;
            sharedOpen = sharedNeedsNoOpening;
        }
        if (opened != null) {
            opened.close();
        }
    }

    @Override
    public boolean isRunning() {
        return opener != null;
    }

    /** Closes the store's connection: after every lifecycle stop, before Spring's factory (which it depends on). */
    @Override
    public synchronized void close() {
        closed = true;
        stop();
    }
}
