package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;

/** Reads {@code idempotency.requests}; a request is counted as it ends, a moment after its client has the answer. */
public final class RequestCounts {
    private RequestCounts() {
    }

    public static double count(MeterRegistry meters, String route, String outcome) {
        Counter counter = meters.find(IdempotencyMetrics.REQUESTS).tag("route", route).tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    /** Polls (bounded) until the count reaches {@code expected}; fails with what it was otherwise. */
    public static void awaitCount(MeterRegistry meters, String route, String outcome, double expected)
            throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (count(meters, route, outcome) < expected) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("idempotency.requests{route=" + route + ",outcome=" + outcome + "} is "
                        + count(meters, route, outcome) + ", expected " + expected);
            }
            Thread.sleep(20);
        }
    }
}
