package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.http.Fault;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A route with {@code contract: ietf} ({@code /ietf/**}), through the real gateway, Redis and HTTP: the
 * idempotency-key draft's statuses with RFC 9457 problem details and the same Retry-After, while the default route
 * beside it ({@code /merchants/**}) answers exactly as before.
 */
class IetfContractIntegrationTest extends GatewayFilterTestBase {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String BODY = "{\"legalName\":\"ACME\",\"taxId\":\"ACME12345\"}";

    @Test
    void aMissingKeyIs400ProblemDetailsAndNeverReachesTheBackend() {
        EntityExchangeResult<byte[]> missing = client.post().uri("/ietf/merchants")
                .contentType(MediaType.APPLICATION_JSON).bodyValue(BODY).exchange()
                .expectStatus().isEqualTo(400).expectBody().returnResult();

        assertProblem(missing, "idempotency-key-missing", "Idempotency key is missing",
                "The Idempotency-Key header is required.");
        upstream.verify(exactly(0), postRequestedFor(anyUrl()));
    }

    @Test
    void aMalformedKeyIs400ProblemDetailsAndNeverReachesTheBackend() {
        EntityExchangeResult<byte[]> tooLong = client.post().uri("/ietf/merchants")
                .header("Idempotency-Key", "a".repeat(65)).contentType(MediaType.APPLICATION_JSON).bodyValue(BODY)
                .exchange().expectStatus().isEqualTo(400).expectBody().returnResult();

        assertProblem(tooLong, "idempotency-key-invalid", "Idempotency key is invalid",
                "The Idempotency-Key header must be at most 64 characters long.");
        upstream.verify(exactly(0), postRequestedFor(anyUrl()));
    }

    @Test
    void theSameKeyWithAnotherPayloadIs422ProblemDetails() {
        upstream.stubFor(post(urlEqualTo("/ietf/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody("{\"processId\":\"p-1\"}")));
        String key = newKey();
        send("/ietf/merchants", key, BODY).expectStatus().isEqualTo(202);

        EntityExchangeResult<byte[]> other = send("/ietf/merchants", key, BODY.replace("ACME\"", "ACME Ltd\""))
                .expectStatus().isEqualTo(422).expectBody().returnResult();

        assertProblem(other, "idempotency-key-reused", "Idempotency key is already used",
                GatewayError.PAYLOAD_MISMATCH_MESSAGE);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/ietf/merchants")));
    }

    @Test
    void aRetryWhileTheFirstIsInFlightIs409ProblemDetailsWithRetryAfter() throws Exception {
        upstream.stubFor(post(urlEqualTo("/ietf/slow")).willReturn(aResponse().withStatus(202).withBody("ok")
                .withFixedDelay(2000)));
        String key = newKey();
        CompletableFuture<ResponseEntity<String>> first = WebClient.create("http://127.0.0.1:" + port).post()
                .uri("/ietf/slow").header("Idempotency-Key", key).contentType(MediaType.APPLICATION_JSON).bodyValue(BODY)
                .retrieve().toEntity(String.class).toFuture();
        ConflictAndConcurrencyIntegrationTest.awaitUpstreamRequests("/ietf/slow", 1);

        // The route waits 300 ms for the first request to settle, then answers.
        EntityExchangeResult<byte[]> retry = send("/ietf/slow", key, BODY).expectStatus().isEqualTo(409)
                .expectBody().returnResult();

        assertProblem(retry, "request-in-flight", "A request is outstanding for this idempotency key",
                GatewayError.stillInFlight(Duration.ofSeconds(1)).message());
        assertThat(retry.getResponseHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        assertThat(first.get(20, TimeUnit.SECONDS).getStatusCode().value()).isEqualTo(202);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/ietf/slow")));
    }

    @Test
    void aRetryOfARequestWhoseOutcomeIsUnknownIs409ProblemDetailsWithRetryAfter() {
        upstream.stubFor(post(urlEqualTo("/ietf/broken")).willReturn(aResponse().withFault(Fault.EMPTY_RESPONSE)));
        String key = newKey();
        EntityExchangeResult<byte[]> broken = send("/ietf/broken", key, BODY).expectStatus().isEqualTo(502)
                .expectBody().returnResult();
        assertProblem(broken, "upstream-connection-broken", "Upstream connection broke, outcome unknown",
                GatewayError.outcomeUnknownBroken().message());

        EntityExchangeResult<byte[]> retry = send("/ietf/broken", key, BODY).expectStatus().isEqualTo(409)
                .expectBody().returnResult();

        assertProblem(retry, "outcome-uncertain", "The outcome of the request with this idempotency key is unknown",
                GatewayError.uncertainRetry(Duration.ofSeconds(1)).message());
        assertThat(retry.getResponseHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/ietf/broken")));
    }

    @Test
    void aReplayIsTheBackendsAnswerUnderEitherContract() {
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody("{\"processId\":\"p-1\"}")));
        for (String path : new String[] {"/ietf/merchants", "/merchants"}) {
            String key = newKey();
            send(path, key, BODY).expectStatus().isEqualTo(202);
            send(path, key, BODY).expectStatus().isEqualTo(200)
                    .expectHeader().valueEquals("Idempotency-Replayed", "true")
                    .expectHeader().contentType(MediaType.APPLICATION_JSON)
                    .expectBody(String.class).isEqualTo("{\"processId\":\"p-1\"}");
        }
    }

    @Test
    void theKeyWrittenAsTheDraftWritesItQuotedIsTheSameKey() {
        upstream.stubFor(post(urlEqualTo("/ietf/quoted")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody("{\"processId\":\"p-q\"}")));
        String key = newKey();
        send("/ietf/quoted", "\"" + key + "\"", BODY).expectStatus().isEqualTo(202);
        send("/ietf/quoted", key, BODY).expectStatus().isEqualTo(200)
                .expectHeader().valueEquals("Idempotency-Replayed", "true");
        send("/ietf/quoted", "\"" + key + "\"", BODY).expectStatus().isEqualTo(200)
                .expectHeader().valueEquals("Idempotency-Replayed", "true");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/ietf/quoted")));

        // Not on the Onboarding contract's route: its key rules refuse the quotes.
        send("/merchants", "\"" + newKey() + "\"", BODY).expectStatus().isEqualTo(422);
    }

    @Test
    void theDefaultRouteBesideItStillAnswersWithTheOnboardingEnvelope() {
        client.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON).bodyValue(BODY).exchange()
                .expectStatus().isEqualTo(422)
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectBody()
                .jsonPath("$.status.status").isEqualTo("FAILED")
                .jsonPath("$.status.reason").isEqualTo(422)
                .jsonPath("$.status.message").isEqualTo("The Idempotency-Key header is required.")
                .jsonPath("$.status.date").exists();

        upstream.stubFor(post(urlEqualTo("/merchants")).willReturn(aResponse().withStatus(202).withBody("ok")));
        String key = newKey();
        send("/merchants", key, BODY).expectStatus().isEqualTo(202);
        send("/merchants", key, BODY.replace("ACME\"", "ACME Ltd\"")).expectStatus().isEqualTo(409)
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectBody()
                .jsonPath("$.status.reason").isEqualTo(409)
                .jsonPath("$.status.message").isEqualTo(GatewayError.PAYLOAD_MISMATCH_MESSAGE);
    }

    private WebTestClient.ResponseSpec send(String path, String key, String body) {
        return client.post().uri(path).header("Idempotency-Key", key).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(body).exchange();
    }

    /** An RFC 9457 body with exactly these members, as application/problem+json, its status repeated. */
    private static void assertProblem(EntityExchangeResult<byte[]> result, String type, String title, String detail) {
        assertThat(result.getResponseHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON);
        JsonNode problem = JSON.readTree(result.getResponseBody());
        assertThat(problem.propertyNames()).containsExactly("type", "title", "status", "detail");
        assertThat(problem.get("type").asString()).isEqualTo("https://retrysafe.dev/problems/" + type);
        assertThat(problem.get("title").asString()).isEqualTo(title);
        assertThat(problem.get("status").isInt()).isTrue();
        assertThat(problem.get("status").asInt()).isEqualTo(result.getStatus().value());
        assertThat(problem.get("detail").asString()).isEqualTo(detail);
    }
}
