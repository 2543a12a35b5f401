package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;

/** Points 1-3: which requests are guarded, the key rules, and the error envelope. */
class KeyValidationIntegrationTest extends GatewayFilterTestBase {

    static Stream<Arguments> invalidKeys() {
        return Stream.of(
                Arguments.of(null, "The Idempotency-Key header is required."),
                Arguments.of("", "The Idempotency-Key header must not be empty."),
                Arguments.of("abc123", "The Idempotency-Key header must be at least 16 characters long."),
                Arguments.of("a".repeat(65), "The Idempotency-Key header must be at most 64 characters long."),
                Arguments.of("8f1c2d3e4a5b6c7d8e9f0a1b!", "The Idempotency-Key header may only contain letters, digits, '-' and '_'."),
                Arguments.of("8f1c2d3e 4a5b6c7d8e9f0a1b", "The Idempotency-Key header may only contain letters, digits, '-' and '_'."));
    }

    @ParameterizedTest
    @MethodSource("invalidKeys")
    void invalidKeyIs422InTheEnvelopeAndNeverReachesTheUpstream(String key, String message) {
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(202)));
        client.post().uri("/merchants")
                .headers(h -> { if (key != null) h.set("Idempotency-Key", key); })
                .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"legalName\":\"ACME\"}")
                .exchange()
                .expectStatus().isEqualTo(422)
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectBody()
                .jsonPath("$.status.status").isEqualTo("FAILED")
                .jsonPath("$.status.reason").isEqualTo(422)
                .jsonPath("$.status.message").isEqualTo(message)
                .jsonPath("$.status.date").value(String.class, date ->
                        assertThat(date).matches("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}[+-]\\d{2}:\\d{2}"));
        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
    }

    @Test
    void keySentTwiceIs422() {
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(202)));
        client.post().uri("/merchants")
                .header("Idempotency-Key", newKey(), newKey())
                .contentType(MediaType.APPLICATION_JSON).bodyValue("{}")
                .exchange()
                .expectStatus().isEqualTo(422)
                .expectBody().jsonPath("$.status.message").isEqualTo("The Idempotency-Key header must be sent only once.");
        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
    }

    @ParameterizedTest
    @MethodSource("validKeys")
    void contractExamplesAreValidKeys(String key) {
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(202).withBody("{}")));
        client.post().uri("/merchants").header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"legalName\":\"ACME\"}")
                .exchange().expectStatus().isEqualTo(202);
    }

    static Stream<String> validKeys() {
        return Stream.of("8f1c2d3e4a5b6c7d8e9f0a1b", "3b241101-e2bb-4255-8caf-4136c566a962",
                "0123456789abcdef0123456789abcdef", "a".repeat(16), "A_b-".repeat(16));
    }

    @ParameterizedTest
    @MethodSource("readMethods")
    void readMethodsPassUntouchedWithoutAKey(HttpMethod method) {
        upstream.stubFor(any(urlEqualTo("/merchants/42")).willReturn(aResponse().withStatus(200).withBody("merchant")));
        client.method(method).uri("/merchants/42").exchange()
                .expectStatus().isOk()
                .expectHeader().doesNotExist("Idempotency-Replayed");
        upstream.verify(exactly(1), anyRequestedFor(urlEqualTo("/merchants/42")));
    }

    static Stream<HttpMethod> readMethods() {
        return Stream.of(HttpMethod.GET, HttpMethod.HEAD, HttpMethod.OPTIONS);
    }

    @ParameterizedTest
    @MethodSource("writeMethods")
    void everyDefaultWriteMethodIsGuarded(HttpMethod method) {
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200)));
        client.method(method).uri("/merchants/42").exchange().expectStatus().isEqualTo(422);
        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
    }

    static Stream<HttpMethod> writeMethods() {
        return Stream.of(HttpMethod.POST, HttpMethod.PUT, HttpMethod.PATCH, HttpMethod.DELETE);
    }

    @Test
    void methodsArgLimitsWhatIsGuarded() {
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200)));
        // The custom route guards POST only: a PUT without key goes through.
        client.put().uri("/custom/1").bodyValue("x").exchange().expectStatus().isOk();
        client.post().uri("/custom/1").bodyValue("x").exchange().expectStatus().isEqualTo(422)
                .expectBody().jsonPath("$.status.message").isEqualTo("The X-Request-Key header is required.");
    }

    @Test
    void keyHeaderNameAndLengthsAreConfigurablePerRoute() {
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200)));
        client.post().uri("/custom/1").header("X-Request-Key", "abcd1234").bodyValue("x")
                .exchange().expectStatus().isOk();
        client.post().uri("/custom/1").header("X-Request-Key", "abcd123").bodyValue("x")
                .exchange().expectStatus().isEqualTo(422)
                .expectBody().jsonPath("$.status.message").isEqualTo("The X-Request-Key header must be at least 8 characters long.");
        client.post().uri("/custom/1").header("X-Request-Key", "a".repeat(21)).bodyValue("x")
                .exchange().expectStatus().isEqualTo(422);
    }

    @Test
    void routesWithoutTheFilterAreUntouched() {
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(201)));
        client.post().uri("/plain/x").bodyValue("x").exchange().expectStatus().isEqualTo(201);
        upstream.verify(exactly(0), getRequestedFor(anyUrl()));
    }
}
