package dev.retrysafe.gateway.idempotency.observability;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Timer;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.Disposable;

/** Issue 6 point 1: requests by outcome per route, store latency, stored sizes, requests in flight and waiting. */
class RequestMetricsIntegrationTest extends ObservabilityTestBase {

    @Test
    void everyOutcomeIsCountedPerRoute() {
        Map<String, Double> before = Map.ofEntries(
                Map.entry("first", requests("orders", "first")),
                Map.entry("replay", requests("orders", "replay")),
                Map.entry("mismatch", requests("orders", "mismatch")),
                Map.entry("invalid-key", requests("orders", "invalid-key")),
                Map.entry("too-large", requests("orders", "too-large")),
                Map.entry("released", requests("orders", "released")),
                Map.entry("replay-unavailable", requests("orders", "replay-unavailable")),
                Map.entry("outcome-unknown", requests("orders", "outcome-unknown")),
                Map.entry("uncertain", requests("orders", "uncertain")),
                Map.entry("upstream-unreachable", requests("unreachable", "upstream-unreachable")));
        upstream.stubFor(post(urlEqualTo("/orders/ok")).willReturn(aResponse().withStatus(202).withBody("done")));
        upstream.stubFor(post(urlEqualTo("/orders/busy")).willReturn(aResponse().withStatus(429)));
        upstream.stubFor(post(urlEqualTo("/orders/big")).willReturn(aResponse().withStatus(200)
                .withBody("x".repeat(3000))));
        upstream.stubFor(post(urlEqualTo("/orders/slow")).willReturn(aResponse().withStatus(202)
                .withFixedDelay(2500)));

        String key = newKey();
        send("/orders/ok", key, "a").expectStatus().isEqualTo(202);
        send("/orders/ok", key, "a").expectStatus().isOk();
        send("/orders/ok", key, "b").expectStatus().isEqualTo(409);
        gateway.post().uri("/orders/ok").bodyValue("a").exchange().expectStatus().isEqualTo(422);
        send("/orders/ok", newKey(), "y".repeat(2000)).expectStatus().isEqualTo(413);
        send("/orders/busy", newKey(), "a").expectStatus().isEqualTo(429);
        String big = newKey();
        send("/orders/big", big, "a").expectStatus().isOk();
        send("/orders/big", big, "a").expectStatus().isEqualTo(409);
        String slow = newKey();
        send("/orders/slow", slow, "a").expectStatus().isEqualTo(504);
        send("/orders/slow", slow, "a").expectStatus().isEqualTo(409);
        send("/unreachable/x", newKey(), "a").expectStatus().isEqualTo(502);

        // Two first requests (/orders/ok and /orders/big), one of every other outcome.
        awaitTrue(() -> before.entrySet().stream().allMatch(e -> requests(
                e.getKey().equals("upstream-unreachable") ? "unreachable" : "orders", e.getKey())
                        == e.getValue() + (e.getKey().equals("first") ? 2 : 1)),
                "the requests counted by outcome");
    }

    @Test
    void aDuplicateOfAnInFlightRequestIsCountedAsInFlightConflict() {
        double conflicts = requests("no-wait", "in-flight-conflict");
        upstream.stubFor(post(urlEqualTo("/no-wait/slow")).willReturn(aResponse().withStatus(202)
                .withFixedDelay(1500)));
        String key = newKey();
        Disposable original = sendInBackground("/no-wait/slow", key, "a");
        try {
            awaitTrue(() -> gauge(IdempotencyMetrics.IN_FLIGHT) >= 1, "the original in flight");
            send("/no-wait/slow", key, "a").expectStatus().isEqualTo(409).expectHeader().exists("Retry-After");
            awaitTrue(() -> requests("no-wait", "in-flight-conflict") == conflicts + 1, "the conflict counted");
        } finally {
            original.dispose();
        }
    }

    @Test
    void requestsInFlightAndWaitingAreGaugedWhileTheyLast() {
        upstream.stubFor(post(urlEqualTo("/long-wait/slow")).willReturn(aResponse().withStatus(202)
                .withBody("done").withFixedDelay(1500)));
        // Upstream exchanges of earlier tests run on after their clients went: start from a quiet instance.
        awaitTrue(() -> gauge(IdempotencyMetrics.IN_FLIGHT) == 0 && gauge(IdempotencyMetrics.WAITING) == 0,
                "no request in flight");
        double inFlight = 0;
        double waiting = 0;
        String key = newKey();
        Disposable original = sendInBackground("/long-wait/slow", key, "a");
        awaitTrue(() -> gauge(IdempotencyMetrics.IN_FLIGHT) == inFlight + 1, "one request in flight");
        Disposable duplicate = sendInBackground("/long-wait/slow", key, "a");
        awaitTrue(() -> gauge(IdempotencyMetrics.WAITING) == waiting + 1, "one duplicate waiting");
        awaitTrue(() -> gauge(IdempotencyMetrics.IN_FLIGHT) == inFlight && gauge(IdempotencyMetrics.WAITING) == waiting,
                "both gauges back once the original is answered");
        original.dispose();
        duplicate.dispose();
    }

    @Test
    void reservationAndStoreCallsAreTimedWithHistogramsAndStoredResponsesMeasured() {
        upstream.stubFor(post(urlEqualTo("/orders/sized")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody("{\"id\":\"" + "z".repeat(500) + "\"}")));
        long reserves = timerCount("reserve");
        long completes = timerCount("complete");
        DistributionSummary sizes = meters.find(IdempotencyMetrics.STORED_RESPONSE).tag("route", "orders").summary();
        long stored = sizes == null ? 0 : sizes.count();
        double storedBytes = sizes == null ? 0 : sizes.totalAmount();

        send("/orders/sized", newKey(), "a").expectStatus().isEqualTo(202);

        awaitTrue(() -> timerCount("reserve") == reserves + 1 && timerCount("complete") == completes + 1,
                "one reserve and one complete timed");
        Timer reserve = meters.find(IdempotencyMetrics.STORE_DURATION).tags("operation", "reserve", "route", "orders",
                "result", "ok").timer();
        assertThat(reserve.max(TimeUnit.MILLISECONDS)).isPositive();
        // Percentile histogram buckets are published, so that Prometheus can compute percentiles.
        assertThat(reserve.takeSnapshot().histogramCounts()).isNotEmpty();
        DistributionSummary after = meters.find(IdempotencyMetrics.STORED_RESPONSE).tag("route", "orders").summary();
        assertThat(after.count()).isEqualTo(stored + 1);
        // The 510-byte body plus its status and headers.
        assertThat(after.totalAmount() - storedBytes).isGreaterThan(510).isLessThan(700);
        assertThat(after.takeSnapshot().histogramCounts()).isNotEmpty();
    }

    private long timerCount(String operation) {
        Timer timer = meters.find(IdempotencyMetrics.STORE_DURATION)
                .tags("operation", operation, "route", "orders", "result", "ok").timer();
        return timer == null ? 0 : timer.count();
    }

    private WebTestClient.ResponseSpec send(String path, String key, String body) {
        // identity: WireMock would gzip for the client's Accept-Encoding, and sizes here are of plain bodies.
        return gateway.post().uri(path).header("Idempotency-Key", key).header("Accept-Encoding", "identity")
                .contentType(MediaType.TEXT_PLAIN).bodyValue(body).exchange();
    }
}
