package dev.retrysafe.gateway.idempotency.filter;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The store calls that settle exchanges, counted while they run. A result's store call outlives its request: the
 * client's answer ends as soon as the upstream's answer is through, not one Redis round trip later (on a kept-alive
 * connection that round trip was in every next request's latency). So that a graceful shutdown does not cut such a
 * call short, and leave a record whose client has its answer to lapse to UNCERTAIN, stopping waits for the calls
 * under way, at most {@code bound}; it runs after the web server's graceful shutdown (no new requests come) and
 * before the store's connections close.
 */
public final class PendingSettles implements SmartLifecycle {
    /**
     * After the web server's graceful shutdown ({@code DEFAULT_PHASE - 1024}: the requests under way have had their
     * answers) and before the web server stops ({@code DEFAULT_PHASE - 2048}); stopping goes from high phases to low.
     */
    static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 1536;
    private static final Logger log = LoggerFactory.getLogger(PendingSettles.class);

    private final AtomicInteger underWay = new AtomicInteger();
    private final Object ended = new Object();
    private final Duration bound;
    private volatile boolean running;
    private volatile boolean draining;

    /** @param bound how long stopping waits for the calls under way (the settle deadline) */
    public PendingSettles(Duration bound) {
        this.bound = bound;
    }

    void begin() {
        underWay.incrementAndGet();
    }

    void end() {
        if (underWay.decrementAndGet() == 0) {
            synchronized (ended) {
                ended.notifyAll();
            }
        }
    }

    /** How many settle calls run now. */
    public int underWay() {
        return underWay.get();
    }

    /** Whether {@link #stop()} is waiting for calls under way. */
    public boolean draining() {
        return draining;
    }

    @Override
    public void start() {
        running = true;
    }

    /** Waits until no settle call runs, or {@code bound} has passed; what is left goes on until the store closes. */
    @Override
    public void stop() {
        running = false;
        draining = true;
        boolean none;
        try {
            none = awaitNone(bound);
        } finally {
            draining = false;
        }
        if (!none) {
            log.warn("{} store calls settling exchanges whose clients have their answers were still under way after "
                    + "{} ms of shutdown; records whose call does not land lapse to UNCERTAIN", underWay.get(),
                    bound.toMillis());
        }
    }

    /** Waits until no settle call runs, at most {@code max}; whether none runs. */
    public boolean awaitNone(Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        synchronized (ended) {
            try {
                long left;
                while (underWay.get() > 0 && (left = deadline - System.nanoTime()) > 0) {
                    ended.wait(Math.max(1, left / 1_000_000));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return underWay.get() == 0;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
