package dev.retrysafe.gateway.idempotency.observability;

import dev.retrysafe.gateway.idempotency.operator.RecordCounts;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Counts the store's records every {@code interval} and publishes the counts as gauges: {@code idempotency.records
 * {state}} (IN_FLIGHT, UNCERTAIN, COMPLETED) and {@code idempotency.records.pending} (IN_FLIGHT longer than
 * {@code pendingAfter}). The counts are cluster-wide, the same on every instance that samples. A failed or
 * unfinished sample, or one that would read more than {@code maxRecords} records, leaves the gauges at NaN rather
 * than at stale numbers that look current.
 */
public final class RecordCountSampler implements SmartLifecycle {
    public static final String RECORDS = "idempotency.records";
    public static final String PENDING = "idempotency.records.pending";
    private static final Logger log = LoggerFactory.getLogger(RecordCountSampler.class);

    private final RecordInspector inspector;
    private final Duration interval;
    private final Duration pendingAfter;
    private final long maxRecords;
    private volatile RecordCounts latest;
    private volatile Disposable sampling;

    public RecordCountSampler(RecordInspector inspector, MeterRegistry registry, Duration interval,
            Duration pendingAfter, long maxRecords) {
        this.inspector = inspector;
        this.interval = interval;
        this.pendingAfter = pendingAfter;
        this.maxRecords = maxRecords;
        gauge(registry, RECORDS, "IN_FLIGHT", "Records reserved and not yet settled", RecordCounts::inFlight);
        gauge(registry, RECORDS, "UNCERTAIN", "Records whose outcome is unknown, waiting for reconciliation",
                RecordCounts::uncertain);
        gauge(registry, RECORDS, "COMPLETED", "Records holding a result for replay", RecordCounts::completed);
        Gauge.builder(PENDING, this, sampler -> value(sampler.latest, RecordCounts::pending))
                .description("IN_FLIGHT records reserved longer ago than idempotency.record-counts.pending-after")
                .register(registry);
    }

    private void gauge(MeterRegistry registry, String name, String state, String description,
            java.util.function.ToLongFunction<RecordCounts> count) {
        Gauge.builder(name, this, sampler -> value(sampler.latest, count))
                .description(description)
                .tag("state", state)
                .register(registry);
    }

    private static double value(RecordCounts counts, java.util.function.ToLongFunction<RecordCounts> count) {
        return counts == null ? Double.NaN : count.applyAsLong(counts);
    }

    /** Takes one sample now; also what each tick does. */
    public Mono<RecordCounts> sample() {
        return inspector.count(pendingAfter, maxRecords)
                // A sample slower than the interval is abandoned: the next tick starts afresh.
                .timeout(interval.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : interval)
                .doOnNext(counts -> latest = counts)
                .doOnError(e -> {
                    latest = null;
                    log.warn("Record counts unavailable ({}); idempotency.records gauges are NaN until the next "
                            + "sample succeeds", e instanceof RecordInspector.TooManyRecords
                            ? e.getMessage() + ", the limit idempotency.record-counts.max-records sets" : e.toString());
                })
                .onErrorResume(e -> Mono.empty());
    }

    @Override
    public void start() {
        // Ticks that come while a sample is still running are dropped, never queued.
        sampling = Flux.interval(Duration.ZERO, interval)
                .onBackpressureDrop()
                .concatMap(tick -> sample(), 0)
                .subscribe();
    }

    @Override
    public void stop() {
        Disposable current = sampling;
        sampling = null;
        if (current != null) {
            current.dispose();
        }
    }

    @Override
    public boolean isRunning() {
        return sampling != null;
    }
}
