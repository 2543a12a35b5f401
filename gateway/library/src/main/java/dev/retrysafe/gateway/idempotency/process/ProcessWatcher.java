package dev.retrysafe.gateway.idempotency.process;

import dev.retrysafe.gateway.idempotency.background.ClaimRound;
import dev.retrysafe.gateway.idempotency.background.FleetWorker;
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
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * Learns when the process a stored 202 started has ended, so the key's retention can start then: from status
 * responses that pass through the gateway ({@link ProcessStatusObserver}), and by polling the status resource while
 * nobody asks. The processes to poll are the fleet's, in a {@link ProcessQueue} the 202's own store step fills: every
 * instance with a route that tracks processes takes its share of the due polls, whichever instance stored the 202,
 * so a stopped or killed instance loses none.
 */
public final class ProcessWatcher extends FleetWorker {
    private static final Logger log = LoggerFactory.getLogger(ProcessWatcher.class);
    /** Polls claimed per slot of the queue and round. */
    static final int BATCH = 32;
    /** Longest a status poll may take; a claim lasts longer, so that no other instance polls meanwhile. */
    static final Duration POLL_TIMEOUT = Duration.ofSeconds(5);
    static final Duration CLAIM = POLL_TIMEOUT.multipliedBy(3);
    /** A round of polls within its claims' lease: past it they lapse anyway, and the next round starts afresh. */
    public static final Duration ROUND_LIMIT = CLAIM;

    private final IdempotencyStore store;
    private final Optional<ProcessQueue> queue;
    private final WebClient http;
    private final Duration tick;
    private final Duration maxDelay;
    private final Duration restoreInterval;
    /** Longest one round of polls may take: past it its claims lapse anyway, and the next round starts afresh. */
    private final Duration roundLimit;
    private final Map<String, TrackedRoute> routes = new ConcurrentHashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();

    /**
     * @param initialDelay    the first poll's delay after a 202 (the queue doubles it up to {@code maxDelay}); also how
     *                        often this instance looks for due polls, at most once a second
     * @param restoreInterval how often the fleet checks the queue's directory ({@link #restoreLostSlotsNow()})
     * @param roundLimit      longest one round of polls may take ({@link #ROUND_LIMIT}: its claims' lease)
     */
    public ProcessWatcher(IdempotencyStore store, Optional<ProcessQueue> queue, WebClient http, Duration initialDelay,
            Duration maxDelay, Duration restoreInterval, Duration roundLimit) {
        super("process queue", tickOf(initialDelay), restoreInterval, queue.isPresent());
        this.roundLimit = roundLimit;
        this.store = store;
        this.queue = queue;
        this.http = http;
        this.tick = tickOf(initialDelay);
        this.maxDelay = maxDelay;
        this.restoreInterval = restoreInterval;
    }

    /** How often this instance looks for due polls: the first poll's delay, at most once a second. */
    private static Duration tickOf(Duration initialDelay) {
        return initialDelay.compareTo(Duration.ofSeconds(1)) < 0 ? initialDelay : Duration.ofSeconds(1);
    }

    /**
     * A route whose 202s start processes: its status resource and retention, for whichever instance polls. The
     * first such route starts this instance's share of the polling.
     */
    public void track(String routeId, ProcessTracking tracking, Duration retention) {
        routes.put(routeId, new TrackedRoute(tracking, retention));
        routeAdded(routeId, "the end of its processes is only seen in status reads through the gateway");
    }

    @Override
    protected Mono<Integer> dueNow() {
        return pollDueNow();
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
        return ClaimRound.whileFound(this::claimDueNow, roundLimit, this::closing);
    }

    private Mono<Integer> claimDueNow() {
        if (closing() || queue.isEmpty()) {
            return Mono.just(0);
        }
        // Bounded like every store call: a Redis that takes the claim and never answers would hold the loop, and with
        // it this instance's share of the polls, until Lettuce's own command timeout.
        return StoreCall.within(roundLimit, () -> queue.get().pollDue(BATCH, CLAIM, maxDelay, this::poll))
                .onErrorResume(e -> {
                    if (!closing()) {
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
    @Override
    protected Mono<Integer> restoreLostSlotsNow() {
        return queue.map(q -> restoreLogged(() -> q.restoreLostSlots(restoreInterval))).orElse(Mono.just(0));
    }

    private Mono<PollResult> poll(DueProcess due) {
        TrackedRoute route = routes.get(due.routeId());
        if (closing() || route == null) {
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
        return takingItsShare();
    }

    private record TrackedRoute(ProcessTracking tracking, Duration retention) {
    }
}
