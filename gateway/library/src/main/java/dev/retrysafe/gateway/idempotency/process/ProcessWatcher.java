package dev.retrysafe.gateway.idempotency.process;

import dev.retrysafe.gateway.idempotency.background.ClaimRound;
import dev.retrysafe.gateway.idempotency.background.PeriodicRounds;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue.DueProcess;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue.PollResult;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.StoreCall;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * Learns when the process a stored 202 started has ended, so the key's retention can start then: from status
 * responses that pass through the gateway ({@link ProcessStatusObserver}), and by polling the status resource while
 * nobody asks. The processes to poll are the fleet's, in a {@link ProcessQueue} the 202's own store step fills: every
 * instance with a route that tracks processes takes its share of the due polls, whichever instance stored the 202,
 * so a stopped or killed instance loses none.
 */
public final class ProcessWatcher implements DisposableBean, ApplicationListener<ContextClosedEvent>,
        ApplicationContextAware, SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(ProcessWatcher.class);
    /** Polls claimed per slot of the queue and round. */
    static final int BATCH = 32;
    /** Longest a status poll may take; a claim lasts longer, so that no other instance polls meanwhile. */
    static final Duration POLL_TIMEOUT = Duration.ofSeconds(5);
    static final Duration CLAIM = POLL_TIMEOUT.multipliedBy(3);

    private final IdempotencyStore store;
    private final Optional<ProcessQueue> queue;
    private final WebClient http;
    private final Duration tick;
    private final Duration maxDelay;
    private final Duration restoreInterval;
    /** Longest one round of polls may take: past it its claims lapse anyway, and the next round starts afresh. */
    private final Duration roundLimit;
    private final Map<String, TrackedRoute> routes = new ConcurrentHashMap<>();
    private final PeriodicRounds polling;
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile boolean closing;
    private volatile boolean running = true;
    private ApplicationContext context;

    /**
     * @param initialDelay the first poll's delay after a 202 (the queue doubles it up to {@code maxDelay}); also how
     *                     often this instance looks for due polls, at most once a second
     */
    public ProcessWatcher(IdempotencyStore store, Optional<ProcessQueue> queue, WebClient http, Duration initialDelay,
            Duration maxDelay) {
        this(store, queue, http, initialDelay, maxDelay, Duration.ofSeconds(60));
    }

    /** @param restoreInterval how often the fleet checks the queue's directory ({@link #restoreLostSlotsNow()}) */
    public ProcessWatcher(IdempotencyStore store, Optional<ProcessQueue> queue, WebClient http, Duration initialDelay,
            Duration maxDelay, Duration restoreInterval) {
        this(store, queue, http, initialDelay, maxDelay, restoreInterval, CLAIM);
    }

    ProcessWatcher(IdempotencyStore store, Optional<ProcessQueue> queue, WebClient http, Duration initialDelay,
            Duration maxDelay, Duration restoreInterval, Duration roundLimit) {
        this.roundLimit = roundLimit;
        this.store = store;
        this.queue = queue;
        this.http = http;
        this.tick = initialDelay.compareTo(Duration.ofSeconds(1)) < 0 ? initialDelay : Duration.ofSeconds(1);
        this.maxDelay = maxDelay;
        this.restoreInterval = restoreInterval;
        long restoreEvery = Math.max(1, restoreInterval.toMillis() / tick.toMillis());
        this.polling = PeriodicRounds.every("process polls", tick, tick,
                t -> (t + 1) % restoreEvery == 0 ? restoreLostSlotsNow().then(pollDueNow()) : pollDueNow())
                .queueingOneTick();
    }

    /**
     * A route whose 202s start processes: its status resource and retention, for whichever instance polls. The
     * first such route starts this instance's share of the polling.
     */
    public void track(String routeId, ProcessTracking tracking, Duration retention) {
        routes.put(routeId, new TrackedRoute(tracking, retention));
        if (queue.isEmpty()) {
            log.warn("Route {} tracks processes but no ProcessQueue is configured: their end is only seen in status "
                    + "reads through the gateway", routeId);
            return;
        }
        startPolling();
    }

    private synchronized void startPolling() {
        if (!closing && running && !routes.isEmpty() && queue.isPresent()) {
            polling.start();
        }
    }

    private synchronized void stopPolling() {
        polling.stop();
    }

    /**
     * Running from construction, so a watcher used without a Spring context polls as soon as a route is tracked;
     * the context stops it when it pauses (a cached test context: Redis is stopped then) and starts it again.
     */
    @Override
    public void start() {
        running = true;
        startPolling();
    }

    @Override
    public void stop() {
        running = false;
        stopPolling();
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** A status response for the process went through the gateway. */
    public Mono<Boolean> observed(String routeId, String processId, String terminalStatus, Duration retention) {
        return store.processEnded(routeId, processId, terminalStatus, retention)
                .doOnNext(ended -> {
                    if (ended) {
                        log.debug("Process {} of route {} ended ({}): retention starts", processId, routeId,
                                terminalStatus);
                    }
                });
    }

    /**
     * One round: claims of due polls (up to 64 slots of the queue each), asked, and claimed again as long as a claim
     * found some and the round is within its limit ({@link ClaimRound}). Emits how many.
     */
    Mono<Integer> pollDueNow() {
        return ClaimRound.whileFound(this::claimDueNow, roundLimit, () -> closing);
    }

    private Mono<Integer> claimDueNow() {
        if (closing || queue.isEmpty()) {
            return Mono.just(0);
        }
        // Bounded like every store call: a Redis that takes the claim and never answers would hold the loop, and with
        // it this instance's share of the polls, until Lettuce's own command timeout.
        return StoreCall.within(roundLimit, () -> queue.get().pollDue(BATCH, CLAIM, maxDelay, this::poll))
                .onErrorResume(e -> {
                    if (!closing) {
                        log.warn("Looking for due process polls failed: {}", e.toString());
                    }
                    return Mono.just(0);
                });
    }

    /**
     * Puts back in the queue's directory what a Redis failover lost of it, once every
     * {@code process-poll.restore-interval} for the whole fleet (the instance whose turn it is does it), so a process
     * so orphaned is polled at most that much later than its poll was due.
     */
    Mono<Integer> restoreLostSlotsNow() {
        if (closing || queue.isEmpty()) {
            return Mono.just(0);
        }
        return queue.get().restoreLostSlots(restoreInterval)
                .doOnNext(lost -> {
                    if (lost > 0) {
                        log.warn("{} slot(s) of the process queue holding pending processes were missing from its "
                                + "directory (a write to it lost with a Redis master?): put back, their processes are "
                                + "polled again", lost);
                    }
                })
                .onErrorResume(e -> {
                    if (!closing) {
                        log.warn("Restoring the process queue's directory failed: {}", e.toString());
                    }
                    return Mono.just(0);
                });
    }

    private Mono<PollResult> poll(DueProcess due) {
        TrackedRoute route = routes.get(due.routeId());
        if (closing || route == null) {
            // A route this instance does not have (yet): asked again later, here or by an instance that has it.
            return Mono.just(PollResult.RUNNING);
        }
        String upstream = due.upstream();
        if (!upstream.startsWith("http://") && !upstream.startsWith("https://")) {
            log.debug("Not polling process {}: upstream {} is not a plain HTTP URI", due.processId(), upstream);
            return Mono.just(PollResult.RUNNING);
        }
        String url = upstream.replaceAll("/+$", "") + route.tracking().statusPath(due.processId());
        inFlight.incrementAndGet();
        return http.get().uri(url).retrieve().toEntity(byte[].class)
                .timeout(POLL_TIMEOUT)
                .map(entity -> route.tracking().terminalStatus(entity.getHeaders().getFirst("Content-Encoding"),
                        entity.getBody() == null ? new byte[0] : entity.getBody()))
                .onErrorResume(e -> Mono.just(Optional.empty()))
                .<PollResult>map(status -> {
                    if (status.isPresent()) {
                        log.debug("Process {} of route {} ended ({}): retention starts", due.processId(),
                                due.routeId(), status.get());
                        return new PollResult.Ended(status.get(), route.retention());
                    }
                    return PollResult.RUNNING;
                })
                .doFinally(signal -> inFlight.decrementAndGet());
    }

    /** Status polls under way on this instance now. */
    public int polling() {
        return inFlight.get();
    }

    /** Whether this instance takes its share of the fleet's due polls. */
    public boolean pollingShare() {
        return polling.isRunning();
    }

    /**
     * The context is closing: polls stop before anything else does. Left running, a poll that sees its process end
     * would call a Redis client already stopped, and log a warning on every normal stop. What this instance had
     * claimed comes back to the fleet when its claims lapse.
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

    private record TrackedRoute(ProcessTracking tracking, Duration retention) {
    }
}
