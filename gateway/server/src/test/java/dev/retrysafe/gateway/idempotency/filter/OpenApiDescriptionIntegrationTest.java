package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.support.RawHttpClient;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.response.ErrorEnvelope;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.openapi.IdempotencyOpenApiAutoConfiguration;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.ClassPathResource;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The OpenAPI description of the gateway's own responses: served on the main port, a valid OpenAPI 3.1 document
 * with reusable components, and true to what the gateway really answers (the 503 is checked in
 * {@link RedisUnavailableIntegrationTest}, which has a Redis that is down).
 */
class OpenApiDescriptionIntegrationTest extends GatewayFilterTestBase {
    String yaml;
    OpenApiContract contract;

    @BeforeEach
    void fetchTheServedDescription() {
        yaml = client.get().uri("/idempotency/openapi.yaml").exchange()
                .expectStatus().isOk()
                .expectBody(String.class).returnResult().getResponseBody();
        contract = new OpenApiContract(yaml);
    }

    @Test
    void isServedOnTheMainPortAsYaml() throws IOException {
        client.get().uri("/idempotency/openapi.yaml").exchange()
                .expectStatus().isOk()
                .expectHeader().contentType(MediaType.parseMediaType("application/yaml"));
        String packaged = new ClassPathResource(IdempotencyOpenApiAutoConfiguration.DOCUMENT_LOCATION)
                .getContentAsString(StandardCharsets.UTF_8);
        assertThat(yaml).isEqualTo(packaged);
    }

    @Test
    void isAValidOpenApi31DocumentWithReusableComponents() {
        ParseOptions options = new ParseOptions();
        options.setResolve(true);
        SwaggerParseResult parsed = new OpenAPIV3Parser().readContents(yaml, null, options);
        assertThat(parsed.getMessages()).isEmpty();
        OpenAPI api = parsed.getOpenAPI();
        assertThat(api.getOpenapi()).isEqualTo("3.1.0");
        assertThat(api.getComponents().getResponses()).containsKeys("IdempotencyKeyInvalid", "IdempotencyConflict",
                "RequestBodyTooLarge", "RequestBodyTimeout", "IdempotencyUnavailable", "UpstreamFailed", "UpstreamTimeout", "Replayed");
        assertThat(api.getComponents().getSchemas()).containsKeys("ErrorEnvelope", "ErrorStatus");
        assertThat(api.getComponents().getHeaders()).containsKeys("IdempotencyReplayed", "RetryAfter",
                "RetryAfterAlways");
        assertThat(api.getComponents().getParameters().get("IdempotencyKey").getName()).isEqualTo("Idempotency-Key");
        assertThat(api.getComponents().getResponses().get("IdempotencyUnavailable").getHeaders().get("Retry-After")
                .get$ref()).isEqualTo("#/components/headers/RetryAfterAlways");
    }

    @Test
    void everyDocumentedExampleMatchesItsSchema() {
        List<String> checked = new ArrayList<>();
        contract.document().at("/components/responses").properties().forEach(response -> {
            JsonNode examples = response.getValue().at("/content/application~1json/examples");
            examples.properties().forEach(example -> {
                assertThat(contract.errors(OpenApiContract.bodySchemaOf(response.getKey()), example.getValue()
                        .get("value"))).as(response.getKey() + "/" + example.getKey()).isEmpty();
                checked.add(response.getKey() + "/" + example.getKey());
            });
        });
        assertThat(checked).hasSizeGreaterThanOrEqualTo(15);
    }

    @Test
    void theSchemaRejectsWhatIsNotTheEnvelope() {
        String schema = OpenApiContract.bodySchemaOf("IdempotencyConflict");
        JsonNode valid = json("{\"status\":{\"status\":\"FAILED\",\"reason\":409,\"message\":\"m\","
                + "\"date\":\"2026-08-17T10:14:03-05:00\"}}");
        assertThat(contract.errors(schema, valid)).isEmpty();
        assertThat(contract.errors(schema, json("{\"status\":{\"status\":\"FAILED\",\"reason\":409,\"message\":\"m\","
                + "\"date\":\"2026-08-17T10:14:03Z\"}}"))).isNotEmpty();
        assertThat(contract.errors(schema, json("{\"status\":{\"status\":\"OK\",\"reason\":409,\"message\":\"m\","
                + "\"date\":\"2026-08-17T10:14:03-05:00\"}}"))).isNotEmpty();
        assertThat(contract.errors(schema, json("{\"status\":{\"reason\":409,\"message\":\"m\","
                + "\"date\":\"2026-08-17T10:14:03-05:00\"}}"))).isNotEmpty();
        assertThat(contract.errors(schema, json("{\"status\":{\"status\":\"FAILED\",\"reason\":409,\"message\":\"m\","
                + "\"date\":\"2026-08-17T10:14:03-05:00\",\"code\":7}}"))).isNotEmpty();
        assertThat(contract.errors(schema, json("{\"error\":\"m\"}"))).isNotEmpty();
    }

    @Test
    void realKeyErrorsMatchTheDescription() {
        assertDescribed(client.post().uri("/merchants/openapi").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{}").exchange());
        assertDescribed(client.post().uri("/merchants/openapi").header("Idempotency-Key", newKey(), newKey())
                .bodyValue("{}").exchange());
        assertDescribed(client.post().uri("/merchants/openapi").header("Idempotency-Key", "short")
                .bodyValue("{}").exchange());
        assertDescribed(client.post().uri("/merchants/openapi").header("Idempotency-Key", "a".repeat(65))
                .bodyValue("{}").exchange());
        assertDescribed(client.post().uri("/merchants/openapi").header("Idempotency-Key", "8f1c2d3e4a5b6c7d8e9f0a1b!")
                .bodyValue("{}").exchange());
    }

    @Test
    void aTenantHeaderNamingTwoTenantsIsTheDocumented422() {
        assertDescribed(client.post().uri("/merchants/openapi").header("Idempotency-Key", newKey())
                .header("X-Tenant-Id", "acme", "globex").bodyValue("{}").exchange());
    }

    @Test
    void aStoredResponseThatCannotBeReplayedIsADocumented409() {
        HttpHeaders headers = new HttpHeaders();
        headers.setContentType(MediaType.APPLICATION_JSON);
        GatewayError unreadable = GatewayError.replayUnreadable(202);
        contract.assertDescribes(409, headers, ErrorEnvelope.json(409, unreadable.message(),
                OffsetDateTime.now()));
    }

    @Test
    void realConflictsMatchTheDescription() {
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202).withBody("{\"processId\":\"p\"}")));
        String key = newKey();
        client.post().uri("/merchants/openapi").header("Idempotency-Key", key).bodyValue("{\"a\":1}")
                .exchange().expectStatus().isEqualTo(202);
        assertDescribed(client.post().uri("/merchants/openapi").header("Idempotency-Key", key)
                .bodyValue("{\"a\":2}").exchange());

        // Still in flight after the route's 300 ms wait: 409 with Retry-After.
        upstream.stubFor(post(urlEqualTo("/short-wait/openapi")).willReturn(aResponse().withStatus(202)
                .withFixedDelay(2000)));
        String slowKey = newKey();
        WebClient.create("http://127.0.0.1:" + port).post().uri("/short-wait/openapi")
                .header("Idempotency-Key", slowKey).bodyValue("x").retrieve().toBodilessEntity().subscribe();
        ConflictAndConcurrencyIntegrationTest.awaitUpstreamRequests("/short-wait/openapi", 1);
        EntityExchangeResult<byte[]> inFlight = client.post().uri("/short-wait/openapi")
                .header("Idempotency-Key", slowKey).bodyValue("x").exchange()
                .expectStatus().isEqualTo(409).expectBody().returnResult();
        assertThat(inFlight.getResponseHeaders().getFirst("Retry-After")).isNotNull();
        contract.assertDescribes(409, inFlight.getResponseHeaders(), inFlight.getResponseBody());
    }

    @Test
    void realLimitAndUpstreamErrorsMatchTheDescription() {
        assertDescribed(client.post().uri("/merchants/openapi").header("Idempotency-Key", newKey())
                .bodyValue(new byte[1024 * 1024 + 1]).exchange());
        assertDescribed(client.post().uri("/unreachable/openapi").header("Idempotency-Key", newKey())
                .bodyValue("x").exchange());
    }

    @Test
    void aStalledBodyIsTheDocumented408() {
        RawHttpClient.Response stalled = new RawHttpClient(port).send(("POST /merchants/openapi HTTP/1.1\r\n"
                + "Host: localhost\r\nIdempotency-Key: " + newKey() + "\r\nContent-Length: 10\r\n\r\n{")
                .getBytes(StandardCharsets.US_ASCII), (out, answered) -> answered.await(), Duration.ofSeconds(15));
        HttpHeaders headers = new HttpHeaders();
        stalled.headers().forEach(headers::addAll);
        contract.assertDescribes(stalled.status(), headers, stalled.body());
    }

    @Test
    void malformedFramingIsTheDocumented400() {
        String head = "POST /merchants/openapi HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: " + newKey()
                + "\r\nContent-Type: application/json\r\nTransfer-Encoding: ";
        for (String framing : List.of("chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "gzip\r\n\r\n{}")) {
            RawHttpClient.Response refused = new RawHttpClient(port).send(head + framing, new byte[0],
                    Duration.ofSeconds(15));
            HttpHeaders headers = new HttpHeaders();
            refused.headers().forEach(headers::addAll);
            contract.assertDescribes(refused.status(), headers, refused.body());
            assertThat(headers.getFirst(HttpHeaders.CONNECTION)).as(framing).isEqualTo("close");
        }
    }

    @Test
    void aReplayCarriesTheDocumentedHeader() {
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202).withBody("{\"processId\":\"p\"}")));
        String key = newKey();
        client.post().uri("/merchants/replay-doc").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202);
        String replayed = client.post().uri("/merchants/replay-doc").header("Idempotency-Key", key).bodyValue("x")
                .exchange().expectStatus().isOk().returnResult(Void.class).getResponseHeaders()
                .getFirst("Idempotency-Replayed");
        JsonNode header = contract.referenced(contract.document().at("/components/responses/Replayed/headers/"
                + "Idempotency-Replayed"));
        assertThat(header.path("required").asBoolean()).isTrue();
        assertThat(contract.errors("/components/headers/IdempotencyReplayed/schema", json("\"" + replayed + "\"")))
                .isEmpty();
        assertThat(contract.errors("/components/headers/IdempotencyReplayed/schema", json("\"false\""))).isNotEmpty();
    }

    private void assertDescribed(WebTestClient.ResponseSpec spec) {
        EntityExchangeResult<byte[]> result = spec.expectBody().returnResult();
        contract.assertDescribes(result.getStatus().value(), result.getResponseHeaders(), result.getResponseBody());
    }

    private static JsonNode json(String text) {
        return JsonMapper.builder().build().readTree(text);
    }
}
