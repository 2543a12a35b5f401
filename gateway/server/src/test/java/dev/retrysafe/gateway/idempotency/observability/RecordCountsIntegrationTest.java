package dev.retrysafe.gateway.idempotency.observability;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;

import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * Issue 6 point 1: the cluster-wide counts of UNCERTAIN, IN_FLIGHT and COMPLETED records and of IN_FLIGHT records
 * older than the threshold, sampled every 200 ms here ({@code idempotency.record-counts.*}), pending after 1 s.
 */
class RecordCountsIntegrationTest extends ObservabilityTestBase {

    @Test
    void uncertainAndCompletedRecordsAreCounted() {
        upstream.stubFor(post(urlEqualTo("/orders/unknown")).willReturn(aResponse().withStatus(202)
                .withFixedDelay(2500)));
        upstream.stubFor(post(urlEqualTo("/orders/done")).willReturn(aResponse().withStatus(202)));
        double uncertain = gaugeOrZero(RecordCountSampler.RECORDS, "state", "UNCERTAIN");
        double completed = gaugeOrZero(RecordCountSampler.RECORDS, "state", "COMPLETED");

        gateway.post().uri("/orders/unknown").header("Idempotency-Key", newKey()).bodyValue("a").exchange()
                .expectStatus().isEqualTo(504);
        gateway.post().uri("/orders/done").header("Idempotency-Key", newKey()).bodyValue("a").exchange()
                .expectStatus().isEqualTo(202);

        awaitTrue(() -> gauge(RecordCountSampler.RECORDS, "state", "UNCERTAIN") >= uncertain + 1
                && gauge(RecordCountSampler.RECORDS, "state", "COMPLETED") >= completed + 1,
                "the new UNCERTAIN and COMPLETED records counted");
    }

    @Test
    void anInFlightRecordOlderThanTheThresholdIsPendingUntilItIsSettled() {
        awaitTrue(() -> gauge(RecordCountSampler.PENDING) == 0, "nothing pending to begin with");
        upstream.stubFor(post(urlEqualTo("/long-wait/stuck")).willReturn(aResponse().withStatus(202)
                .withFixedDelay(3000)));
        Disposable request = sendInBackground("/long-wait/stuck", newKey(), "a");
        try {
            awaitTrue(() -> gauge(RecordCountSampler.RECORDS, "state", "IN_FLIGHT") >= 1
                    && gauge(RecordCountSampler.PENDING) == 0, "in flight, not yet pending");
            awaitTrue(() -> gauge(RecordCountSampler.PENDING) == 1, "pending once older than a second");
            awaitTrue(() -> gauge(RecordCountSampler.PENDING) == 0, "no longer pending once answered");
        } finally {
            request.dispose();
        }
    }

    private double gaugeOrZero(String name, String... tags) {
        double value = gauge(name, tags);
        return Double.isNaN(value) ? 0 : value;
    }
}
