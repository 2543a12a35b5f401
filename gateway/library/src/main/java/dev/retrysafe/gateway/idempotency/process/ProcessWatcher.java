package dev.retrysafe.gateway.idempotency.process;

import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Learns when the process a stored 202 started has ended, so the key's retention can start then: from status
 * responses that pass through the gateway ({@link ProcessStatusObserver}), and by polling the status resource itself
 * with back-off while nobody asks. Polling is per instance and in memory; a key whose watcher died stays bound until
 * the status is read through some gateway or the hard cap ends.
 */
public final class ProcessWatcher implements DisposableBean, ApplicationListener<ContextClosedEvent>,
        ApplicationContextAware {
    private static final Logger log = LoggerFactory.getLogger(ProcessWatcher.class);

    private final IdempotencyStore store;
    private final WebClient http;
    private final Duration initialDelay;
    private final Duration maxDelay;
    private final Map<String, Disposable> polls = new ConcurrentHashMap<>();
    private volatile boolean closing;
    private ApplicationContext context;

    public ProcessWatcher(IdempotencyStore store, WebClient http, Duration initialDelay, Duration maxDelay) {
        this.store = store;
        this.http = http;
        this.initialDelay = initialDelay;
        this.maxDelay = maxDelay;
    }

    /** Links the process to its record, then polls its status until it ends. */
    public Mono<Void> watch(IdempotencyScope scope, String processId, ProcessTracking tracking, String upstream,
            Duration retention) {
        return store.linkProcess(scope.routeId(), processId, scope, tracking.maxRetention())
                .then(Mono.fromRunnable(() -> startPolling(scope.routeId(), processId, tracking, upstream, retention)));
    }

    /** A status response for the process went through the gateway. */
    public Mono<Boolean> observed(String routeId, String processId, String terminalStatus, Duration retention) {
        return store.processEnded(routeId, processId, terminalStatus, retention)
                .doOnNext(ended -> {
                    if (ended) {
                        log.debug("Process {} of route {} ended ({}): retention starts", processId, routeId,
                                terminalStatus);
                        stopPolling(routeId, processId);
                    }
                });
    }

    private void startPolling(String routeId, String processId, ProcessTracking tracking, String upstream,
            Duration retention) {
        if (closing) {
            return;
        }
        if (!upstream.startsWith("http://") && !upstream.startsWith("https://")) {
            log.debug("Not polling process {}: upstream {} is not a plain HTTP URI", processId, upstream);
            return;
        }
        String url = upstream.replaceAll("/+$", "") + tracking.statusPath(processId);
        log.debug("Polling {} until process {} ends", url, processId);
        long deadline = System.nanoTime() + tracking.maxRetention().toNanos();
        String id = routeId + ":" + processId;
        polls.computeIfAbsent(id, k -> poll(url, tracking, initialDelay, deadline)
                .filter(Optional::isPresent)
                .flatMap(status -> observed(routeId, processId, status.get(), retention))
                .doFinally(signal -> polls.remove(k))
                .subscribe(ended -> { }, error -> {
                    if (!closing) {
                        log.warn("Polling process {} failed: {}", processId, error.toString());
                    }
                }));
    }

    /** Asks the status resource after {@code delay}, then again with a doubled delay, until it reports an end. */
    private Mono<Optional<String>> poll(String url, ProcessTracking tracking, Duration delay, long deadline) {
        if (System.nanoTime() > deadline) {
            return Mono.just(Optional.empty());
        }
        return Mono.delay(delay)
                .then(http.get().uri(url).retrieve().toEntity(byte[].class)
                        .map(entity -> tracking.terminalStatus(entity.getHeaders().getFirst("Content-Encoding"),
                                entity.getBody() == null ? new byte[0] : entity.getBody()))
                        .onErrorResume(e -> Mono.just(Optional.empty())))
                .flatMap(status -> status.isPresent() ? Mono.just(status)
                        : poll(url, tracking, next(delay), deadline));
    }

    private Duration next(Duration delay) {
        Duration doubled = delay.multipliedBy(2);
        return doubled.compareTo(maxDelay) > 0 ? maxDelay : doubled;
    }

    private void stopPolling(String routeId, String processId) {
        Disposable poll = polls.remove(routeId + ":" + processId);
        if (poll != null) {
            poll.dispose();
        }
    }

    /** Processes being polled now. */
    public int polling() {
        return polls.size();
    }

    /**
     * The context is closing: polls stop before anything else does. Left running, a poll that sees its process end
     * would call a Redis client already stopped, and log a warning per pending process on every normal stop.
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
        polls.values().forEach(Disposable::dispose);
        polls.clear();
    }
}
