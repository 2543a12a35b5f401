package dev.retrysafe.gateway.idempotency.background;

import java.time.Duration;
import java.util.Objects;
import java.util.function.LongFunction;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A round of work every {@code interval}, one round at a time: a tick that comes while a round still runs is dropped
 * (or, with {@link #queueingOneTick}, waits for it), never queued up, so a slow Redis or upstream cannot pile rounds
 * onto itself. A round that fails or outlasts its bound is logged at DEBUG and the next tick starts the next one.
 * {@link #start()} and {@link #stop()} may be called any number of times, from any thread; a stopped worker can be
 * started again (a paused test context, a restarted application context). Thread-safe.
 */
public final class PeriodicRounds {
    private static final Logger log = LoggerFactory.getLogger(PeriodicRounds.class);

    private final String name;
    private final Duration firstAfter;
    private final Duration interval;
    private final Duration roundBound;
    private final int queuedTicks;
    private final LongFunction<? extends Publisher<?>> round;
    private Disposable loop;

    private PeriodicRounds(String name, Duration firstAfter, Duration interval, Duration roundBound, int queuedTicks,
            LongFunction<? extends Publisher<?>> round) {
        this.name = Objects.requireNonNull(name, "name");
        this.firstAfter = Objects.requireNonNull(firstAfter, "firstAfter");
        this.interval = Objects.requireNonNull(interval, "interval");
        this.roundBound = Objects.requireNonNull(roundBound, "roundBound");
        this.queuedTicks = queuedTicks;
        this.round = Objects.requireNonNull(round, "round");
        if (interval.isZero() || interval.isNegative()) {
            throw new IllegalArgumentException(name + " interval must be positive, was " + interval);
        }
    }

    /**
     * @param name       what the rounds do, for the log ("record counts")
     * @param firstAfter when the first round starts after {@link #start()}
     * @param round      one round, given the tick's number (0 for the first)
     */
    public static PeriodicRounds every(String name, Duration firstAfter, Duration interval,
            LongFunction<? extends Publisher<?>> round) {
        return new PeriodicRounds(name, firstAfter, interval, interval.multipliedBy(1000), 0, round);
    }

    /** The same rounds, each given up (and logged) past {@code bound}. */
    public PeriodicRounds boundedBy(Duration bound) {
        return new PeriodicRounds(name, firstAfter, interval, bound, queuedTicks, round);
    }

    /**
     * The same rounds, one tick kept while a round runs: the next round starts as soon as the running one ends, when
     * a tick came meanwhile. For work whose rounds claim what is due, where waiting a whole interval would leave it.
     */
    public PeriodicRounds queueingOneTick() {
        return new PeriodicRounds(name, firstAfter, interval, roundBound, 1, round);
    }

    public synchronized void start() {
        if (loop != null) {
            return;
        }
        loop = Flux.interval(firstAfter, interval)
                .onBackpressureDrop()
                .concatMap(tick -> Flux.from(round.apply(tick)).then()
                        .timeout(roundBound)
                        .onErrorResume(e -> {
                            log.debug("A round of {} not done ({}): next in {}", name, e.toString(), interval);
                            return Mono.empty();
                        }), queuedTicks)
                .subscribe();
    }

    public synchronized void stop() {
        if (loop != null) {
            loop.dispose();
            loop = null;
        }
    }

    public synchronized boolean isRunning() {
        return loop != null;
    }
}
