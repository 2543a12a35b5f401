package dev.retrysafe.gateway.idempotency.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

/**
 * The gateway's own meters besides {@code idempotency.events}: requests by outcome, store latency, requests in
 * flight on this instance, stored response sizes. Timers and the size summary publish histogram buckets so that
 * Prometheus can compute percentiles across instances. docs/operations/metrics-and-logs.md lists them all.
 */
public final class IdempotencyMetrics {
    public static final String REQUESTS = "idempotency.requests";
    public static final String STORE_DURATION = "idempotency.store.duration";
    public static final String IN_FLIGHT = "idempotency.requests.in.flight";
    public static final String WAITING = "idempotency.requests.waiting";
    public static final String STORED_RESPONSE = "idempotency.stored.response";
    public static final String STORE_MEMORY_LOST = "idempotency.store.memory-lost";
    public static final String RECONCILIATIONS = "idempotency.reconciliations";
    public static final String STORE_EVICTING_MASTERS = "idempotency.store.evicting-masters";

    private final MeterRegistry registry;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger waiting = new AtomicInteger();
    private final Counter memoryLost;
    // Builders with histograms are not free: one meter per tag combination, looked up by a flat key.
    private final Map<String, Counter> requests = new ConcurrentHashMap<>();
    private final Map<String, Timer> storeTimers = new ConcurrentHashMap<>();
    private final Map<String, DistributionSummary> storedSizes = new ConcurrentHashMap<>();
    private final Map<String, Counter> reconciliations = new ConcurrentHashMap<>();

    public IdempotencyMetrics(MeterRegistry registry) {
        this.registry = registry;
        Gauge.builder(IN_FLIGHT, inFlight, AtomicInteger::get)
                .description("Guarded requests this instance has reserved and is exchanging with the upstream now")
                .register(registry);
        Gauge.builder(WAITING, waiting, AtomicInteger::get)
                .description("Duplicates on this instance waiting for their in-flight original")
                .register(registry);
        // Registered at 0 from the start, so that an alert on its increase has a series to look at.
        memoryLost = Counter.builder(STORE_MEMORY_LOST)
                .description("Losses of a Redis master's memory seen by this instance (its marker key gone)")
                .register(registry);
    }

    public MeterRegistry registry() {
        return registry;
    }

    void requestEnded(String route, RequestOutcome outcome) {
        requests.computeIfAbsent(route + '\n' + outcome.tag(), k -> Counter.builder(REQUESTS)
                        .description("Guarded requests by how they ended")
                        .tags("route", route, "outcome", outcome.tag())
                        .register(registry))
                .increment();
    }

    void storeCall(String operation, String route, String result, long nanos) {
        storeTimers.computeIfAbsent(operation + '\n' + route + '\n' + result, k -> Timer.builder(STORE_DURATION)
                        .description("Idempotency store calls as the request waits for them (reserve = reservation)")
                        .tags("operation", operation, "route", route, "result", result)
                        .publishPercentileHistogram()
                        .minimumExpectedValue(Duration.ofMillis(1))
                        .maximumExpectedValue(Duration.ofSeconds(10))
                        .register(registry))
                .record(Duration.ofNanos(nanos));
    }

    void stored(String route, long bytes) {
        storedSizes.computeIfAbsent(route, k -> DistributionSummary.builder(STORED_RESPONSE)
                        .description("Size of each response stored for replay: status, headers and body, "
                                + "before compression")
                        .baseUnit("bytes")
                        .tags("route", route)
                        .publishPercentileHistogram()
                        .minimumExpectedValue(64.0)
                        .maximumExpectedValue(8.0 * 1024 * 1024)
                        .register(registry))
                .record(bytes);
    }

    /**
     * Counts one lookup of an UNCERTAIN record at its upstream by what it did: {@code found} (completed from it),
     * {@code not-found} (released), {@code failed} (no answer to trust, asked again later), {@code credentials}
     * (refused with 401/403: asked again later too, but the route's lookup credentials need a fix).
     */
    public void reconciled(String route, String outcome) {
        reconciliations(route, outcome).increment();
    }

    /** A reconciling route's counters, at 0 from its start, so that an alert on their rate has series to read. */
    public void reconciling(String route) {
        for (String outcome : new String[] {"found", "not-found", "failed", "credentials"}) {
            reconciliations(route, outcome);
        }
    }

    private Counter reconciliations(String route, String outcome) {
        return reconciliations.computeIfAbsent(route + '\n' + outcome, k -> Counter.builder(RECONCILIATIONS)
                .description("Lookups of UNCERTAIN records at their upstream, by what they did")
                .tags("route", route, "outcome", outcome)
                .register(registry));
    }

    /** Counts one loss of a Redis master's memory (a restart without persistence, an empty replica, FLUSHALL). */
    public void storeMemoryLost() {
        memoryLost.increment();
    }

    /**
     * Publishes how many Redis masters evict keys by their {@code maxmemory-policy}, as the store's memory check last
     * read them: above 0, records may be forgotten before their retention ends.
     */
    public void evictingMasters(IntSupplier evicting) {
        Gauge.builder(STORE_EVICTING_MASTERS, evicting, IntSupplier::getAsInt)
                .description("Redis masters whose maxmemory-policy evicts keys, records included (0: none)")
                .strongReference(true) // the supplier is held by nothing else
                .register(registry);
    }

    /** Counts one request as exchanging with the upstream until the returned handle is closed. */
    Runnable forwarding() {
        return hold(inFlight);
    }

    /** Counts one request as waiting for its in-flight original until the returned handle is closed. */
    Runnable waitingForOriginal() {
        return hold(waiting);
    }

    private static Runnable hold(AtomicInteger gauge) {
        gauge.incrementAndGet();
        AtomicBoolean released = new AtomicBoolean();
        return () -> {
            if (released.compareAndSet(false, true)) {
                gauge.decrementAndGet();
            }
        };
    }
}
