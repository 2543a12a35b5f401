package dev.retrysafe.gateway.idempotency.observability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.operator.RecordAges;
import dev.retrysafe.gateway.idempotency.operator.RecordCounts;
import dev.retrysafe.gateway.idempotency.operator.RecordFilter;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** Record counts are sampled once as the application starts, then on their interval: no gauge waits a minute. */
class RecordCountSamplerTest {
    final AtomicInteger samples = new AtomicInteger();
    final CountDownLatch sampled = new CountDownLatch(1);
    final RecordInspector inspector = new RecordInspector() {
        @Override
        public Mono<RecordCounts> count(Duration pendingAfter, long maxRecords) {
            return Mono.fromSupplier(() -> {
                samples.incrementAndGet();
                return new RecordCounts(2, 1, java.util.OptionalLong.of(40), 0, 0,
                        new RecordAges(Duration.ZERO, Duration.ofMillis(90_500), Duration.ofDays(2)));
            }).doOnNext(counts -> sampled.countDown());
        }

        @Override
        public Mono<RecordView> find(String scopeHash, boolean includeBody) {
            return Mono.empty();
        }

        @Override
        public Flux<RecordView> list(RecordFilter filter) {
            return Flux.empty();
        }

        @Override
        public Mono<String> release(String scopeHash) {
            return Mono.empty();
        }

        @Override
        public Mono<String> complete(String scopeHash, StoredResponse response, Duration retention, String who,
                String why) {
            return Mono.empty();
        }
    };

    @Test
    void theFirstSampleIsTakenAtStartNotAfterTheInterval() throws InterruptedException {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        RecordCountSampler sampler = new RecordCountSampler(inspector, registry, Duration.ofHours(1),
                Duration.ofSeconds(60), 100_000);
        assertThat(registry.get(RecordCountSampler.RECORDS).tag("state", "COMPLETED").gauge().value())
                .as("before any sample: unknown, never a 0 that looks real").isNaN();

        sampler.start();
        try {
            assertThat(sampled.await(10, TimeUnit.SECONDS)).as("sampled at start, an hour before its interval")
                    .isTrue();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (Double.isNaN(completedGauge(registry)) && System.nanoTime() < deadline) {
                Thread.onSpinWait(); // the sample's value lands a moment after the inspector answered
            }
            assertThat(completedGauge(registry)).isEqualTo(40);
            assertThat(samples.get()).isEqualTo(1);
        } finally {
            sampler.stop();
        }
    }

    @Test
    void theAgesArePublishedInSecondsByStateNaNBeforeAnySample() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        RecordCountSampler sampler = new RecordCountSampler(inspector, registry, Duration.ofHours(1),
                Duration.ofSeconds(60), 100_000);
        assertThat(age(registry, "uncertain")).isNaN();

        sampler.sample().block(Duration.ofSeconds(10));

        assertThat(age(registry, "in-flight")).as("none: 0").isZero();
        assertThat(age(registry, "uncertain")).isEqualTo(90.5);
        assertThat(age(registry, "process-pending")).isEqualTo(2 * 86_400.0);
        assertThat(registry.get(RecordCountSampler.OLDEST_AGE).tag("state", "uncertain").gauge().getId()
                .getBaseUnit()).isEqualTo("seconds");
    }

    private static double age(SimpleMeterRegistry registry, String state) {
        return registry.get(RecordCountSampler.OLDEST_AGE).tag("state", state).gauge().value();
    }

    private static double completedGauge(SimpleMeterRegistry registry) {
        return registry.get(RecordCountSampler.RECORDS).tag("state", "COMPLETED").gauge().value();
    }
}
