package dev.retrysafe.gateway.idempotency.observability;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.spi.ILoggingEvent;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;

/**
 * Issue 6 point 2: one line per guarded request with route, tenant hash, scope hash, outcome, statuses, duration
 * and trace id, never the raw key, tenant, body or stored response; the trace context continued and propagated to
 * the upstream; the same hash in the operator API.
 */
class RequestLogLineIntegrationTest extends ObservabilityTestBase {
    static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    static final String CLIENT_SPAN_ID = "00f067aa0ba902b7";

    @Test
    void oneLinePerGuardedRequestWithHashesAndNeverTheKeyTenantBodyOrStoredResponse() {
        String tenant = newTenant();
        String key = "KEY-" + UUID.randomUUID();
        String body = "{\"secret\":\"BODY-" + UUID.randomUUID() + "\"}";
        String stored = "{\"processId\":\"RESPONSE-" + UUID.randomUUID() + "\"}";
        upstream.stubFor(post(urlEqualTo("/orders/log")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody(stored)));
        upstream.stubFor(get(urlEqualTo("/orders/log")).willReturn(aResponse().withStatus(200)));

        send("/orders/log", tenant, key, body).expectStatus().isEqualTo(202);
        send("/orders/log", tenant, key, body).expectStatus().isOk();
        send("/orders/log", tenant, key, "{\"other\":1}").expectStatus().isEqualTo(409);
        send("/orders/log", tenant, "bad key!", body).expectStatus().isEqualTo(422);
        gateway.get().uri("/orders/log").header("X-Tenant-Id", tenant).exchange().expectStatus().isOk();

        List<Map<String, String>> found = linesOf(tenant, 4);
        Map<String, Map<String, String>> byOutcome = found.stream()
                .collect(Collectors.toMap(f -> f.get("outcome"), f -> f));
        assertThat(byOutcome).containsOnlyKeys("first", "replay", "mismatch", "invalid-key");
        String scope = new IdempotencyScope("header:" + tenant, "orders", new IdempotencyKey(key)).hash();
        for (Map<String, String> line : found) {
            assertThat(line).containsEntry("route", "orders").containsEntry("method", "POST")
                    .containsEntry("tenant", tenantHash(tenant));
            assertThat(line.get("durationMs")).matches("\\d+");
            assertThat(line.get("traceId")).matches("[0-9a-f]{32}");
        }
        assertThat(byOutcome.get("first")).containsEntry("status", "202").containsEntry("upstreamStatus", "202")
                .containsEntry("scope", scope);
        assertThat(byOutcome.get("replay")).containsEntry("status", "200").containsEntry("upstreamStatus", "-")
                .containsEntry("scope", scope);
        assertThat(byOutcome.get("mismatch")).containsEntry("status", "409").containsEntry("scope", scope);
        assertThat(byOutcome.get("invalid-key")).containsEntry("status", "422").containsEntry("scope", "-");

        List<String> everything;
        synchronized (lines) {
            everything = lines.list.stream().map(event -> event.getFormattedMessage() + " "
                    + event.getKeyValuePairs()).toList();
        }
        assertThat(everything).isNotEmpty().allSatisfy(line -> assertThat(line)
                .doesNotContain(key).doesNotContain("bad key!").doesNotContain(tenant)
                .doesNotContain(body.substring(11, 47)).doesNotContain(stored.substring(14, 54)));
    }

    @Test
    void theFieldsAreAlsoKeyValuePairsForStructuredLogs() {
        String tenant = newTenant();
        upstream.stubFor(post(urlEqualTo("/orders/kv")).willReturn(aResponse().withStatus(202)));
        send("/orders/kv", tenant, newKey(), "a").expectStatus().isEqualTo(202);
        linesOf(tenant, 1);
        ILoggingEvent event;
        synchronized (lines) {
            event = lines.list.stream().filter(e -> e.getFormattedMessage().contains(tenantHash(tenant)))
                    .findFirst().orElseThrow();
        }
        assertThat(event.getKeyValuePairs()).extracting(pair -> pair.key).containsExactly("outcome", "route",
                "method", "status", "upstreamStatus", "durationMs", "tenant", "scope", "traceId");
    }

    @Test
    void anIncomingTraceparentIsContinuedLoggedAndPropagatedToTheUpstream() {
        String tenant = newTenant();
        upstream.stubFor(post(urlEqualTo("/orders/traced")).willReturn(aResponse().withStatus(202)));
        gateway.post().uri("/orders/traced").header("Idempotency-Key", newKey()).header("X-Tenant-Id", tenant)
                .header("traceparent", "00-" + TRACE_ID + "-" + CLIENT_SPAN_ID + "-01")
                .bodyValue("a").exchange().expectStatus().isEqualTo(202);

        String sent = upstream.findAll(postRequestedFor(urlEqualTo("/orders/traced"))).get(0).getHeader("traceparent");
        // Same trace, but the parent is the gateway's own span: the context was continued, not just copied.
        assertThat(sent).matches("00-" + TRACE_ID + "-[0-9a-f]{16}-0[01]")
                .doesNotContain(CLIENT_SPAN_ID);
        assertThat(linesOf(tenant, 1).get(0)).containsEntry("traceId", TRACE_ID);
    }

    @Test
    void withoutATraceparentTheGatewayStartsATraceThatTheUpstreamAndTheLogLineShare() {
        String tenant = newTenant();
        upstream.stubFor(post(urlEqualTo("/orders/new-trace")).willReturn(aResponse().withStatus(202)));
        send("/orders/new-trace", tenant, newKey(), "a").expectStatus().isEqualTo(202);

        String traceId = linesOf(tenant, 1).get(0).get("traceId");
        String sent = upstream.findAll(postRequestedFor(urlEqualTo("/orders/new-trace"))).get(0)
                .getHeader("traceparent");
        assertThat(sent).startsWith("00-" + traceId + "-");
    }

    @Test
    void supportFindsTheLoggedRecordFromTheKeyACustomerReports() {
        String tenant = newTenant();
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/orders/support")).willReturn(aResponse().withStatus(202)));
        send("/orders/support", tenant, key, "a").expectStatus().isEqualTo(202);
        Map<String, String> line = linesOf(tenant, 1).get(0);

        // The customer reports the key; support knows the route and the tenant as the gateway resolves it.
        management.get().uri(b -> b.path("/actuator/idempotency").queryParam("route", "orders")
                        .queryParam("tenant", "header:" + tenant).queryParam("key", key).build())
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.scopeHash").isEqualTo(line.get("scope"))
                .jsonPath("$.tenantHash").isEqualTo(line.get("tenant"))
                .jsonPath("$.state").isEqualTo("COMPLETED");
        // ... and from the hash in the log line alone.
        management.get().uri("/actuator/idempotency/" + line.get("scope"))
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.route").isEqualTo("orders");
    }

    private org.springframework.test.web.reactive.server.WebTestClient.ResponseSpec send(String path, String tenant,
            String key, String body) {
        return gateway.post().uri(path).header("Idempotency-Key", key).header("X-Tenant-Id", tenant)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
    }
}
