package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.response.GatewayError;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.put;
import static com.github.tomakehurst.wiremock.client.WireMock.putRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.EntityExchangeResult;

/** Points 6, 7 and 11: first request forwarded and stored, replays, and which statuses are results. */
class ReplayIntegrationTest extends GatewayFilterTestBase {
    static final String BODY = "{\"processId\":\"7d3c0f52-1111-4a1b-9c1e-2f8a5b6c7d8e\",\"status\":\"PENDING\"}";
    static final String MERCHANT = """
            {"legalName":"ACME","taxId":"ACME12345",
             "integrations":[{"type":"ERP","name":"sap"},{"type":"CRM","name":"hubspot"}],
             "paymentMethods":["CARD","PIX"],"sites":["https://a.example","https://b.example"],
             "settings":{"currency":"BRL","notifications":{"email":true}}}""";
    static final String MERCHANT_REORDERED = """
            {"sites":["https://b.example","https://a.example"],"paymentMethods":["PIX","CARD"],
             "settings":{"notifications":{"email":true},"currency":"BRL"},
             "integrations":[{"name":"hubspot","type":"CRM"},{"name":"sap","type":"ERP"}],
             "taxId":"ACME12345","legalName":"ACME"}""";

    @Test
    void firstRequestIsForwardedWithItsKeyAndAnsweredUnchanged() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withHeader("Location", "/processes/7d3c0f52")
                .withHeader("Retry-After", "3")
                .withHeader("X-Upstream", "legacy")
                .withBody(BODY)));

        client.post().uri("/merchants").header("Idempotency-Key", key).header("X-Custom", "kept")
                .contentType(MediaType.APPLICATION_JSON).bodyValue(MERCHANT)
                .exchange()
                .expectStatus().isEqualTo(202)
                .expectHeader().valueEquals("Location", "/processes/7d3c0f52")
                .expectHeader().valueEquals("Retry-After", "3")
                .expectHeader().valueEquals("X-Upstream", "legacy")
                .expectHeader().doesNotExist("Idempotency-Replayed")
                .expectBody(String.class).isEqualTo(BODY);

        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants"))
                .withHeader("Idempotency-Key", equalTo(key))
                .withHeader("X-Custom", equalTo("kept"))
                .withRequestBody(equalTo(MERCHANT)));
    }

    @Test
    void sameKeyAndContentReplaysAs200WithoutLocationAndTheUpstreamIsNotCalledAgain() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withHeader("Location", "/processes/7d3c0f52")
                .withHeader("Retry-After", "3")
                .withHeader("X-Upstream", "legacy")
                .withBody(BODY)));

        EntityExchangeResult<byte[]> first = client.post().uri("/merchants").header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(MERCHANT)
                .exchange().expectStatus().isEqualTo(202).expectBody().returnResult();

        // Reordered keys and unordered collections are the same content.
        EntityExchangeResult<byte[]> replay = client.post().uri("/merchants").header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(MERCHANT_REORDERED)
                .exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectHeader().doesNotExist("Location")
                .expectHeader().valueEquals("Retry-After", "3")
                .expectHeader().valueEquals("X-Upstream", "legacy")
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectBody().returnResult();

        assertThat(replay.getResponseBody()).isEqualTo(first.getResponseBody());
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants")));
    }

    @Test
    void replayStatusIsConfigurableAndNeverStoredHeadersAreNotReplayed() {
        String key = "abcd1234efgh";
        upstream.stubFor(post(urlEqualTo("/custom/orders")).willReturn(aResponse().withStatus(201)
                .withHeader("Set-Cookie", "session=abc")
                .withHeader("X-Secret", "s3cr3t")
                .withHeader("X-Kept", "yes")
                .withBody("created")));

        client.post().uri("/custom/orders").header("X-Request-Key", key).bodyValue("order")
                .exchange().expectStatus().isEqualTo(201)
                .expectHeader().valueEquals("Set-Cookie", "session=abc")
                .expectHeader().valueEquals("X-Secret", "s3cr3t");
        client.post().uri("/custom/orders").header("X-Request-Key", key).bodyValue("order")
                .exchange().expectStatus().isEqualTo(201)
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectHeader().doesNotExist("Set-Cookie")
                .expectHeader().doesNotExist("X-Secret")
                .expectHeader().valueEquals("X-Kept", "yes")
                .expectBody(String.class).isEqualTo("created");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/custom/orders")));
    }

    @Test
    void setCookieAndHopByHopHeadersAreNeverStoredByDefault() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/cookies")).willReturn(aResponse().withStatus(202)
                .withHeader("Set-Cookie", "session=abc")
                .withHeader("Keep-Alive", "timeout=5")
                .withHeader("X-Kept", "yes")
                .withBody("ok")));
        client.post().uri("/merchants/cookies").header("Idempotency-Key", key).bodyValue("x")
                .exchange().expectStatus().isEqualTo(202).expectHeader().exists("Set-Cookie");
        client.post().uri("/merchants/cookies").header("Idempotency-Key", key).bodyValue("x")
                .exchange().expectStatus().isOk()
                .expectHeader().doesNotExist("Set-Cookie")
                .expectHeader().doesNotExist("Keep-Alive")
                .expectHeader().valueEquals("X-Kept", "yes");
    }

    @ParameterizedTest
    @ValueSource(ints = {400, 404, 409, 422, 500})
    void finalNonSuccessStatusesAreStoredAndReplayedWithTheirOwnStatus(int status) {
        String key = newKey();
        String path = "/merchants/final-" + status;
        upstream.stubFor(post(urlEqualTo(path)).willReturn(aResponse().withStatus(status)
                .withHeader("Location", "/somewhere").withBody("{\"error\":" + status + "}")));

        client.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(status).expectHeader().doesNotExist("Idempotency-Replayed");
        client.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(status)
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectHeader().valueEquals("Location", "/somewhere")
                .expectBody(String.class).isEqualTo("{\"error\":" + status + "}");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo(path)));
    }

    @ParameterizedTest
    @ValueSource(ints = {401, 403, 408, 425, 429, 503})
    void releaseOnStatusIsPassedThroughNotStoredAndTheRetryGoesThrough(int status) {
        String key = newKey();
        String path = "/merchants/release-" + status;
        upstream.stubFor(post(urlEqualTo(path)).inScenario("s" + status).whenScenarioStateIs("Started")
                .willReturn(aResponse().withStatus(status).withHeader("Retry-After", "1").withBody("busy"))
                .willSetStateTo("recovered"));
        upstream.stubFor(post(urlEqualTo(path)).inScenario("s" + status).whenScenarioStateIs("recovered")
                .willReturn(aResponse().withStatus(202).withBody("accepted")));

        client.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(status)
                .expectHeader().valueEquals("Retry-After", "1")
                .expectBody(String.class).isEqualTo("busy");
        client.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202)
                .expectHeader().doesNotExist("Idempotency-Replayed")
                .expectBody(String.class).isEqualTo("accepted");
        client.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo("accepted");
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo(path)));
    }

    @Test
    void theMerchantIdOfAPutIsPartOfTheRequest() {
        String key = newKey();
        upstream.stubFor(put(urlPathEqualTo("/merchants/m-1")).willReturn(aResponse().withStatus(202).withBody("one")));
        upstream.stubFor(put(urlPathEqualTo("/merchants/m-2")).willReturn(aResponse().withStatus(202).withBody("two")));
        client.put().uri("/merchants/m-1").header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(MERCHANT).exchange().expectStatus().isEqualTo(202);
        client.put().uri("/merchants/m-2").header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(MERCHANT).exchange()
                .expectStatus().isEqualTo(409)
                .expectBody().jsonPath("$.status.message").isEqualTo(GatewayError.PAYLOAD_MISMATCH_MESSAGE);
        upstream.verify(exactly(0), putRequestedFor(urlPathEqualTo("/merchants/m-2")));
    }
}
