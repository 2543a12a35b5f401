package dev.retrysafe.gateway.idempotency.observability;

import dev.retrysafe.gateway.idempotency.background.PeriodicRounds;
import dev.retrysafe.gateway.idempotency.operator.RecordAges;
import dev.retrysafe.gateway.idempotency.operator.RecordCounts;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import reactor.core.publisher.Mono;

/**
 * Counts the store's records every {@code interval} and publishes the counts as gauges: {@code idempotency.records
 * {state}} (IN_FLIGHT, UNCERTAIN, COMPLETED), {@code idempotency.records.pending} (IN_FLIGHT longer than
 * {@code pendingAfter}) and {@code idempotency.records.processes-pending} (COMPLETED records whose process has not
 * been seen ending), and with them, from the same reads, {@code idempotency.records.oldest-age{state}} ({@code
 * in-flight}, {@code uncertain}, {@code process-pending}): seconds since the oldest record of that kind became so, by
 * Redis's clock, 0 when there is none. The counts are cluster-wide, the same on every instance that samples. A failed or unfinished
 * sample leaves the gauges at NaN rather than at stale numbers that look current; so does a COMPLETED count that
 * would read more than {@code maxRecords} record keys (the others come from the index of unsettled records).
 */
public final class RecordCountSampler implements SmartLifecycle {
    public static final String RECORDS = "idempotency.records";
    public static final String PENDING = "idempotency.records.pending";
    public static final String PROCESSES_PENDING = "idempotency.records.processes-pending";
    public static final String OLDEST_AGE = "idempotency.records.oldest-age";
    private static final Logger log = LoggerFactory.getLogger(RecordCountSampler.class);

    private final RecordInspector inspector;
    private final Duration interval;
    private final Duration pendingAfter;
    private final long maxRecords;
    private volatile RecordCounts latest;
    private final PeriodicRounds sampling;

    public RecordCountSampler(RecordInspector inspector, MeterRegistry registry, Duration interval,
            Duration pendingAfter, long maxRecords) {
        this.inspector = inspector;
        this.interval = interval;
        this.pendingAfter = pendingAfter;
        this.maxRecords = maxRecords;
        this.sampling = PeriodicRounds.every("record counts", Duration.ZERO, interval, tick -> sample());
        gauge(registry, RECORDS, "IN_FLIGHT", "Records reserved and not yet settled", RecordCounts::inFlight);
        gauge(registry, RECORDS, "UNCERTAIN", "Records whose outcome is unknown, waiting for reconciliation",
                RecordCounts::uncertain);
        Gauge.builder(RECORDS, this, sampler -> sampler.latest == null || sampler.latest.completed().isEmpty()
                        ? Double.NaN : sampler.latest.completed().getAsLong())
                .description("Records holding a result for replay (NaN above idempotency.record-counts.max-records)")
                .tag("state", "COMPLETED")
                .register(registry);
        Gauge.builder(PENDING, this, sampler -> value(sampler.latest, RecordCounts::pending))
                .description("IN_FLIGHT records reserved longer ago than idempotency.record-counts.pending-after")
                .register(registry);
        Gauge.builder(PROCESSES_PENDING, this, sampler -> value(sampler.latest, RecordCounts::processesPending))
                .description("COMPLETED records whose process (a 202's) has not been seen ending yet")
                .register(registry);
        age(registry, "in-flight", "Since the oldest IN_FLIGHT record was reserved (0: none)", RecordAges::inFlight);
        age(registry, "uncertain", "Since the oldest UNCERTAIN record became so (0: none)", RecordAges::uncertain);
        age(registry, "process-pending", "Since the oldest record whose process has not been seen ending stored "
                + "its 202 (0: none)", RecordAges::processPending);
    }

    private void age(MeterRegistry registry, String state, String description, Function<RecordAges, Duration> age) {
        Gauge.builder(OLDEST_AGE, this, sampler -> sampler.latest == null ? Double.NaN
                        : age.apply(sampler.latest.oldest()).toMillis() / 1000.0)
                .description(description)
                .tag("state", state)
                .baseUnit("seconds")
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
                .doOnNext(counts -> {
                    latest = counts;
                    if (counts.completed().isEmpty()) {
                        log.debug("COMPLETED records not counted: more than {} record keys "
                                + "(idempotency.record-counts.max-records)", maxRecords);
                    }
                })
                .doOnError(e -> {
                    latest = null;
                    log.warn("Record counts unavailable ({}); idempotency.records gauges are NaN until the next "
                            + "sample succeeds", e.toString());
                })
                .onErrorResume(e -> Mono.empty());
    }

    @Override
    public void start() {
        sampling.start();
    }

    @Override
    public void stop() {
        sampling.stop();
    }

    @Override
    public boolean isRunning() {
        return sampling.isRunning();
    }
}
