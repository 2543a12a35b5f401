package dev.retrysafe.gateway.idempotency.observability;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The operations surface on the management port: the Prometheus scrape, the store's health, and the Grafana
 * dashboard shipped in {@code config/grafana} and the alerting rules in {@code config/prometheus}, which may only use
 * metrics the gateway really publishes.
 */
class OperationsEndpointsIntegrationTest extends ObservabilityTestBase {
    static final Path DASHBOARD = Path.of("../../config/grafana/idempotency-dashboard.json");
    static final Pattern METRIC = Pattern.compile("\\b(idempotency_[a-z_]+)\\b");

    @Test
    void everyMetricTheDashboardQueriesIsPublishedOnThePrometheusEndpoint() throws IOException {
        produceEveryKindOfMeter();
        JsonNode dashboard = JsonMapper.builder().build().readTree(Files.readString(DASHBOARD));
        Set<String> queried = new TreeSet<>();
        dashboard.findValues("expr").forEach(expr -> {
            Matcher names = METRIC.matcher(expr.asString());
            while (names.find()) {
                queried.add(names.group(1));
            }
        });
        assertThat(queried).as("what the dashboard must cover").contains("idempotency_requests_total",
                "idempotency_store_duration_seconds_bucket", "idempotency_requests_in_flight",
                "idempotency_requests_waiting", "idempotency_records", "idempotency_records_pending",
                "idempotency_stored_response_bytes_bucket", "idempotency_events_total");
        assertThat(dashboard.path("templating").path("list").findValuesAsString("type")).contains("datasource");

        awaitTrue(() -> queried.stream().allMatch(name -> published(scrape(), name)), "every queried metric");
        String scrape = scrape();
        assertThat(queried).allSatisfy(name -> assertThat(published(scrape, name)).as(name).isTrue());
    }

    /**
     * The alerting rules may only use metrics the gateway publishes, so that none silently watches nothing; the
     * reconciliation counter's series exist, at 0, from a reconciling route's start, before any lookup.
     */
    @Test
    void everyMetricTheAlertingRulesUseIsPublishedOnThePrometheusEndpoint() throws IOException {
        produceEveryKindOfMeter();
        Set<String> used = new TreeSet<>();
        Files.readAllLines(PrometheusRulesTest.RULES_DIRECTORY.resolve(PrometheusRulesTest.RULES)).stream()
                .filter(line -> line.trim().startsWith("expr:"))
                .forEach(expr -> {
                    Matcher names = METRIC.matcher(expr);
                    while (names.find()) {
                        used.add(names.group(1));
                    }
                });
        assertThat(used).as("what the rules watch").contains("idempotency_records_oldest_age_seconds",
                "idempotency_events_total", "idempotency_store_memory_lost_total",
                "idempotency_store_evicting_masters", "idempotency_reconciliations_total");
        Set<String> published = new TreeSet<>(used);

        awaitTrue(() -> published.stream().allMatch(name -> published(scrape(), name)), "every metric the rules use, of " + published);
        String scrape = scrape();
        assertThat(published).allSatisfy(name -> assertThat(published(scrape, name)).as(name).isTrue());
        assertThat(scrape).contains("idempotency_records_oldest_age_seconds{state=\"in-flight\"",
                "idempotency_records_oldest_age_seconds{state=\"uncertain\"",
                "idempotency_records_oldest_age_seconds{state=\"process-pending\"");
        for (String outcome : Set.of("found", "not-found", "failed", "credentials")) {
            assertThat(scrape.lines().filter(line -> line.startsWith("idempotency_reconciliations_total{")
                    && line.contains("outcome=\"" + outcome + "\"") && line.contains("route=\"reconciling\"")))
                    .as("the reconciling route's %s series", outcome).isNotEmpty();
        }
    }

    @Test
    void theScrapeNeedsNoCredentialsAndCarriesRequestsByRouteAndOutcome() {
        upstream.stubFor(post(urlEqualTo("/orders/scraped")).willReturn(aResponse().withStatus(202)));
        gateway.post().uri("/orders/scraped").header("Idempotency-Key", newKey()).bodyValue("a")
                .exchange().expectStatus().isEqualTo(202);
        awaitTrue(() -> scrape().lines().anyMatch(line -> line.startsWith("idempotency_requests_total{")
                && line.contains("outcome=\"first\"") && line.contains("route=\"orders\"")), "the counter scraped");
    }

    @Test
    void theStoreHealthIsUpWithItsRoundTripForOperatorsAndOnlyAStatusForOthers() {
        management.get().uri("/actuator/health").headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.components.idempotencyStore.status").isEqualTo("UP")
                .jsonPath("$.components.idempotencyStore.details.roundTripMillis").isNumber();
        management.get().uri("/actuator/health").exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.status").isEqualTo("UP")
                .jsonPath("$.components").doesNotExist();
    }

    /** Requests that make every meter exist: a stored first request, a replay, an incident event. */
    private void produceEveryKindOfMeter() {
        upstream.stubFor(post(urlEqualTo("/orders/all")).willReturn(aResponse().withStatus(202).withBody("ok")));
        String key = newKey();
        gateway.post().uri("/orders/all").header("Idempotency-Key", key).bodyValue("a").exchange()
                .expectStatus().isEqualTo(202);
        gateway.post().uri("/orders/all").header("Idempotency-Key", key).bodyValue("a").exchange()
                .expectStatus().isOk();
        gateway.post().uri("/unreachable/all").header("Idempotency-Key", newKey()).bodyValue("a").exchange()
                .expectStatus().isEqualTo(502);
    }

    private String scrape() {
        return management.get().uri("/actuator/prometheus").exchange()
                .expectStatus().isOk()
                .expectBody(String.class).returnResult().getResponseBody();
    }

    private static boolean published(String scrape, String name) {
        return scrape.lines().anyMatch(line -> line.startsWith(name + "{") || line.startsWith(name + " "));
    }
}
