package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * Issue 22, points 1 and 2 over real HTTP and Redis: a retry that differs only in volatile metadata is replayed,
 * an intent header that differs is a conflict, and a webhook sender's redeliveries (keyed by the event's own id,
 * without Idempotency-Key) reach the upstream once. The exchanges are printed, as the docs show them.
 */
class IntentIntegrationTest extends GatewayFilterTestBase {
    static final String CREATED = "{\"orderId\":\"o-1001\",\"status\":\"CREATED\"}";
    static final String ORDER = "{\"sku\":\"TSHIRT-M\",\"quantity\":2,\"sentAt\":\"2026-12-03T10:00:00Z\","
            + "\"meta\":{\"web\":{\"requestId\":\"r-1\"}}}";
    static final String ORDER_RESENT = "{\"sku\":\"TSHIRT-M\",\"quantity\":2,\"sentAt\":\"2026-12-03T10:00:07Z\","
            + "\"meta\":{\"web\":{\"requestId\":\"r-2\"}}}";
    static final String EVENT = "{\"id\":\"evt_1NG8Du2eZvKYlo2C\",\"type\":\"invoice.paid\"}";

    @Test
    void aRetryDifferingOnlyInIgnoredFieldsIsReplayedAndAnotherApiVersionIsAConflict() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/stamped/orders")).willReturn(aResponse().withStatus(201)
                .withHeader("Content-Type", "application/json").withBody(CREATED)));

        shown("first", order(key, "2", ORDER).expectStatus().isEqualTo(201).expectBody(String.class)
                .isEqualTo(CREATED).returnResult());
        shown("retry, new sentAt and requestId", order(key, "2", ORDER_RESENT).expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo(CREATED).returnResult());
        shown("same bytes, other X-Api-Version", order(key, "3", ORDER_RESENT).expectStatus().isEqualTo(409)
                .expectBody(String.class).value(body -> assertThat(body)
                        .contains("The idempotency key was already used with a different payload.")).returnResult());

        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/stamped/orders")));
    }

    @Test
    void twoDeliveriesOfOneEventKeyedByItsBodyIdReachTheUpstreamOnce() {
        upstream.stubFor(post(urlEqualTo("/events/stripe")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"received\":true}")));

        shown("delivery", event(EVENT).expectStatus().isOk().expectHeader().doesNotExist("Idempotency-Replayed")
                .expectBody(String.class).isEqualTo("{\"received\":true}").returnResult());
        shown("redelivery", event(EVENT).expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo("{\"received\":true}").returnResult());

        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/events/stripe")));
    }

    @Test
    void anEventWithoutItsIdIs422NamingWhereTheKeyWasLookedForAndIsNotForwarded() {
        for (String body : List.of("{\"type\":\"ping\"}", "{\"id\":null}", "{\"id\":{\"v\":1}}")) {
            shown("event " + body, event(body).expectStatus().isEqualTo(422).expectBody(String.class)
                    .value(answer -> assertThat(answer).contains(
                            "The idempotency key is taken from the request body at /id; it ")).returnResult());
        }
        upstream.verify(exactly(0), postRequestedFor(urlEqualTo("/events/stripe")));
    }

    @Test
    void twoDeliveriesWithOneDeliveryHeaderReachTheUpstreamOnce() {
        upstream.stubFor(post(urlEqualTo("/deliveries/github")).willReturn(aResponse().withStatus(204)));
        String delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

        for (int attempt = 0; attempt < 2; attempt++) {
            shown("GitHub delivery", client.post().uri("/deliveries/github").header("X-GitHub-Delivery", delivery)
                    .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"action\":\"opened\"}").exchange()
                    .expectStatus().is2xxSuccessful().expectBody(String.class).returnResult());
        }

        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/deliveries/github")));
    }

    private WebTestClient.ResponseSpec order(String key, String apiVersion, String body) {
        return client.post().uri("/stamped/orders").header("Idempotency-Key", key).header("X-Api-Version", apiVersion)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
    }

    private WebTestClient.ResponseSpec event(String body) {
        return client.post().uri("/events/stripe").contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
    }

    /** The exchange as the docs show it: what was sent, and the status, headers and body that came back. */
    private static void shown(String what, EntityExchangeResult<String> result) {
        System.out.println("---- " + what + "\n> " + result.getMethod() + " " + result.getUrl().getRawPath() + "\n> "
                + result.getRequestHeaders() + "\n> " + new String(result.getRequestBodyContent()) + "\n< "
                + result.getStatus() + "\n< " + result.getResponseHeaders() + "\n< " + result.getResponseBody());
    }
}
