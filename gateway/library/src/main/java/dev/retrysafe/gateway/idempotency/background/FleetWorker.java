package dev.retrysafe.gateway.idempotency.background;

import java.time.Duration;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;
import reactor.core.publisher.Mono;

/**
 * An instance's share of a fleet queue's work (process polls, lookups at the upstream): rounds every interval, each
 * claiming again while its claims find due work ({@link ClaimRound}), and, every {@code restoreInterval}, the
 * queue's directory restored first. Running from construction, so a worker used without a Spring context works as
 * soon as it has work; a context stops it when it pauses (a cached test context: Redis is stopped then) and starts
 * it again; it stops for good when its own context closes, before the Redis client does (claims lapse back to the
 * fleet).
 */
public abstract class FleetWorker implements SmartLifecycle, DisposableBean, ApplicationListener<ContextClosedEvent>,
        ApplicationContextAware {
    private static final Logger log = LoggerFactory.getLogger(FleetWorker.class);

    private final String queueName;
    private final boolean hasQueue;
    private final PeriodicRounds rounds;
    private volatile boolean hasRoute;
    private volatile boolean closing;
    private volatile boolean running = true;
    private ApplicationContext context;

    /**
     * @param queueName       for the log ("process queue")
     * @param interval        how often this instance looks for due work
     * @param restoreInterval how often the fleet checks the queue's directory against its slots
     * @param hasQueue        whether there is a queue at all (none: the work is left to other means)
     */
    protected FleetWorker(String queueName, Duration interval, Duration restoreInterval, boolean hasQueue) {
        this.queueName = queueName;
        this.hasQueue = hasQueue;
        long restoreEvery = Math.max(1, restoreInterval.toMillis() / interval.toMillis());
        this.rounds = PeriodicRounds.every(queueName, interval, interval,
                tick -> (tick + 1) % restoreEvery == 0 ? restoreLostSlotsNow().then(dueNow()) : dueNow())
                .queueingOneTick();
    }

    /** One round: claims of due work, claimed again while found. Emits how much was claimed. */
    protected abstract Mono<Integer> dueNow();

    /** The directory restored, when it is this instance's turn in the interval. Emits how many slots were lost. */
    protected abstract Mono<Integer> restoreLostSlotsNow();

    /**
     * A route that needs the queue's work: the first one starts this instance's share of it.
     *
     * @param withoutQueue what becomes of the route's work when there is no queue, for the WARN that says so
     */
    protected final void routeAdded(String routeId, String withoutQueue) {
        if (!hasQueue) {
            log.warn("Route {} needs the {} but none is configured: {}", routeId, queueName, withoutQueue);
            return;
        }
        hasRoute = true;
        startIfWork();
    }

    private synchronized void startIfWork() {
        if (!closing && running && hasRoute) {
            rounds.start();
        }
    }

    protected final boolean closing() {
        return closing;
    }

    /** Whether this instance takes its share of the fleet's due work now. */
    protected final boolean takingItsShare() {
        return rounds.isRunning();
    }

    /** A restore's result logged as the operator needs it: a loss put back is a WARN, a failure too. */
    protected final Mono<Integer> restoreLogged(Supplier<Mono<Integer>> restore) {
        if (closing) {
            return Mono.just(0);
        }
        return Mono.defer(restore)
                .doOnNext(lost -> {
                    if (lost > 0) {
                        log.warn("{} slot(s) of the {} holding work were missing from its directory (a write to it "
                                + "lost with a Redis master?): put back, their work is done again", lost, queueName);
                    }
                })
                .onErrorResume(e -> {
                    if (!closing) {
                        log.warn("Restoring the {}'s directory failed: {}", queueName, e.toString());
                    }
                    return Mono.just(0);
                });
    }

    @Override
    public synchronized void start() {
        running = true;
        startIfWork();
    }

    @Override
    public synchronized void stop() {
        running = false;
        rounds.stop();
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /**
     * The context is closing: the rounds stop before anything else does. Left running, a round would call a Redis
     * client already stopped, and log a warning on every normal stop.
     */
    @Override
    public void onApplicationEvent(ContextClosedEvent event) {
        // A child context closing (Spring Cloud creates some) announces it here too: only our own close counts.
        if (context == null || event.getApplicationContext() == context) {
            destroy();
        }
    }

    @Override
    public void setApplicationContext(ApplicationContext applicationContext) {
        this.context = applicationContext;
    }

    @Override
    public void destroy() {
        closing = true;
        stop();
    }
}
