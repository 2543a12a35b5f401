package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.support.RawHttpClient;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.response.ErrorContract;
import dev.retrysafe.gateway.idempotency.response.ErrorEnvelope;
import dev.retrysafe.gateway.idempotency.response.ProblemDetails;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.openapi.IdempotencyOpenApiAutoConfiguration;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.parameters.Parameter;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
        assertThat(api.getComponents().getResponses()).containsKeys("IetfBadRequest", "IetfPayloadMismatch",
                "IetfConflict", "IetfRequestBodyTooLarge", "IetfRequestBodyTimeout", "IetfUnavailable",
                "IetfUpstreamFailed", "IetfUpstreamTimeout");
        assertThat(api.getComponents().getSchemas()).containsKeys("ErrorEnvelope", "ErrorStatus", "ProblemDetails");
        assertThat(api.getComponents().getResponses().get("IetfConflict").getContent())
                .containsOnlyKeys("application/problem+json");
        assertThat(api.getComponents().getHeaders()).containsKeys("IdempotencyReplayed", "RetryAfter",
                "RetryAfterAlways");
        assertThat(api.getComponents().getParameters().get("IdempotencyKey").getName()).isEqualTo("Idempotency-Key");
        assertThat(api.getComponents().getResponses().get("IdempotencyUnavailable").getHeaders().get("Retry-After")
                .get$ref()).isEqualTo("#/components/headers/RetryAfterAlways");
    }

    /**
     * A route that takes its key from the body (the shared context's {@code /events}, {@code key-from: body:/id})
     * never reads the header: the description has a parameter for its operations that does not require it, as the
     * gateway, which forwards such a request without the header, does not.
     */
    @Test
    void theKeyHeaderIsRequiredOnAHeaderRouteAndNotOnARouteThatTakesItsKeyFromTheBody() {
        OpenAPI api = new OpenAPIV3Parser().readContents(yaml, null, new ParseOptions()).getOpenAPI();
        Parameter header = api.getComponents().getParameters().get("IdempotencyKey");
        Parameter fromBody = api.getComponents().getParameters().get("IdempotencyKeyOptional");
        assertThat(header.getRequired()).isTrue();
        assertThat(fromBody).as("a parameter for key-from: body routes").isNotNull();
        assertThat(fromBody.getName()).isEqualTo("Idempotency-Key");
        assertThat(fromBody.getIn()).isEqualTo("header");
        assertThat(fromBody.getRequired()).isFalse();

        upstream.stubFor(post(urlEqualTo("/events/openapi")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"received\":true}")));
        client.post().uri("/events/openapi").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"id\":\"evt_" + newKey() + "\"}").exchange().expectStatus().isOk();
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
        List<String> problems = new ArrayList<>();
        contract.document().at("/components/responses").properties().forEach(response -> response.getValue()
                .at("/content/application~1problem+json/examples").properties().forEach(example -> {
                    assertThat(contract.errors(OpenApiContract.problemSchemaOf(response.getKey()), example.getValue()
                            .get("value"))).as(response.getKey() + "/" + example.getKey()).isEmpty();
                    problems.add(response.getKey() + "/" + example.getKey());
                }));
        assertThat(problems).hasSizeGreaterThanOrEqualTo(20);
    }

    /** An example says what the gateway writes: its type's own title, and the status its component is for. */
    @Test
    void everyProblemExampleHasItsTypesTitleAndTheStatusTheIetfContractGivesIt() {
        Map<String, GatewayError.Kind> kinds = new HashMap<>();
        for (GatewayError.Kind kind : GatewayError.Kind.values()) {
            kinds.put(ProblemDetails.type(kind), kind);
        }
        OpenApiContract.IETF_RESPONSE_FOR_STATUS.forEach((status, response) ->
                contract.problemExamples(response).forEach(example -> {
                    GatewayError.Kind kind = kinds.get(example.get("type").asString());
                    assertThat(kind).as(response + ": " + example).isNotNull();
                    assertThat(example.get("title").asString()).as(response + ": " + example)
                            .isEqualTo(ProblemDetails.title(kind));
                    assertThat(example.get("status").asInt()).as(response + ": " + example).isEqualTo(status)
                            .isEqualTo(ErrorContract.IETF.status(kind));
                }));
        List<String> documented = new ArrayList<>();
        contract.document().at("/components/schemas/ProblemDetails/properties/type/enum")
                .forEach(type -> documented.add(type.asString()));
        assertThat(documented).containsExactlyInAnyOrderElementsOf(kinds.keySet());
    }

    @Test
    void theProblemSchemaRejectsWhatIsNotAProblem() {
        String schema = OpenApiContract.problemSchemaOf("IetfConflict");
        String type = "\"type\":\"https://retrysafe.dev/problems/request-in-flight\",\"title\":\"t\"";
        assertThat(contract.errors(schema, json("{" + type + ",\"status\":409,\"detail\":\"d\"}"))).isEmpty();
        assertThat(contract.errors(schema, json("{" + type + ",\"status\":409}"))).isNotEmpty();
        assertThat(contract.errors(schema, json("{" + type + ",\"status\":\"409\",\"detail\":\"d\"}")))
                .isNotEmpty();
        assertThat(contract.errors(schema, json("{" + type + ",\"status\":409,\"detail\":\"d\",\"code\":7}")))
                .isNotEmpty();
        assertThat(contract.errors(schema, json("{\"type\":\"about:blank\",\"title\":\"t\",\"status\":409,"
                + "\"detail\":\"d\"}"))).isNotEmpty();
        assertThat(contract.errors(schema, json("{\"status\":{\"status\":\"FAILED\",\"reason\":409,"
                + "\"message\":\"m\",\"date\":\"2026-08-17T10:14:03-05:00\"}}"))).isNotEmpty();
    }

    /**
     * Every answer the IETF contract writes, as the filter writes it (body, Content-Type, Retry-After), is described
     * by the Ietf* response for its status. All but the body-incomplete one, which no client ever receives.
     */
    @Test
    void everyIetfAnswerIsDescribed() {
        Duration retryAfter = Duration.ofSeconds(1);
        List<GatewayError> answers = List.of(
                GatewayError.keyMissing("The Idempotency-Key header is required."),
                GatewayError.invalidKey("The Idempotency-Key header must not be empty."),
                GatewayError.invalidTenant("X-Tenant-Id"),
                GatewayError.payloadMismatch(),
                GatewayError.stillInFlight(retryAfter),
                GatewayError.uncertainRetry(retryAfter),
                GatewayError.replayUnavailable(200, 1024 * 1024),
                GatewayError.replayUnreadable(202),
                GatewayError.bodyTooLarge(1024 * 1024),
                GatewayError.bodyTimeout(Duration.ofSeconds(30)),
                GatewayError.malformedBody(),
                GatewayError.storeUnavailable(retryAfter),
                GatewayError.upstreamUnreachable(retryAfter),
                GatewayError.outcomeUnknownTimeout(),
                GatewayError.outcomeUnknownBroken());
        assertThat(answers).extracting(GatewayError::kind).containsExactlyInAnyOrder(
                java.util.Arrays.stream(GatewayError.Kind.values())
                        .filter(kind -> kind != GatewayError.Kind.BODY_INCOMPLETE).toArray(GatewayError.Kind[]::new));
        for (GatewayError answer : answers) {
            HttpHeaders headers = new HttpHeaders();
            headers.setContentType(MediaType.parseMediaType(ErrorContract.IETF.mediaType()));
            answer.retryAfter().ifPresent(delay -> headers.set(HttpHeaders.RETRY_AFTER, "1"));
            contract.assertDescribesProblem(ErrorContract.IETF.status(answer.kind()), headers,
                    ErrorContract.IETF.body(answer, OffsetDateTime.now()));
        }
    }

    @Test
    void realIetfKeyErrorsMatchTheDescription() {
        assertProblemDescribed(client.post().uri("/ietf/openapi").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{}").exchange());
        assertProblemDescribed(client.post().uri("/ietf/openapi").header("Idempotency-Key", newKey(), newKey())
                .bodyValue("{}").exchange());
        assertProblemDescribed(client.post().uri("/ietf/openapi").header("Idempotency-Key", "short")
                .bodyValue("{}").exchange());
        assertProblemDescribed(client.post().uri("/ietf/openapi").header("Idempotency-Key", "a".repeat(65))
                .bodyValue("{}").exchange());
        assertProblemDescribed(client.post().uri("/ietf/openapi").header("Idempotency-Key", "8f1c2d3e4a5b6c7d8e9f0a1b!")
                .bodyValue("{}").exchange());
        assertProblemDescribed(client.post().uri("/ietf/openapi").header("Idempotency-Key", newKey())
                .header("X-Tenant-Id", "acme", "globex").bodyValue("{}").exchange());
    }

    @Test
    void realIetfConflictsAndLimitsMatchTheDescription() {
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202).withBody("{\"processId\":\"p\"}")));
        String key = newKey();
        client.post().uri("/ietf/openapi").header("Idempotency-Key", key).bodyValue("{\"a\":1}")
                .exchange().expectStatus().isEqualTo(202);
        assertProblemDescribed(client.post().uri("/ietf/openapi").header("Idempotency-Key", key)
                .bodyValue("{\"a\":2}").exchange());

        upstream.stubFor(post(urlEqualTo("/ietf/openapi-slow")).willReturn(aResponse().withStatus(202)
                .withFixedDelay(2000)));
        String slowKey = newKey();
        WebClient.create("http://127.0.0.1:" + port).post().uri("/ietf/openapi-slow")
                .header("Idempotency-Key", slowKey).bodyValue("x").retrieve().toBodilessEntity().subscribe();
        ConflictAndConcurrencyIntegrationTest.awaitUpstreamRequests("/ietf/openapi-slow", 1);
        EntityExchangeResult<byte[]> inFlight = client.post().uri("/ietf/openapi-slow")
                .header("Idempotency-Key", slowKey).bodyValue("x").exchange()
                .expectStatus().isEqualTo(409).expectBody().returnResult();
        assertThat(inFlight.getResponseHeaders().getFirst("Retry-After")).isNotNull();
        contract.assertDescribesProblem(409, inFlight.getResponseHeaders(), inFlight.getResponseBody());

        assertProblemDescribed(client.post().uri("/ietf/openapi").header("Idempotency-Key", newKey())
                .bodyValue(new byte[1024 * 1024 + 1]).exchange());
    }

    /**
     * On an ietf route a body whose framing breaks is the route's problem+json 400; a Transfer-Encoding other than
     * chunked is refused before any route runs, with the envelope, as IetfBadRequest's application/json says.
     */
    @Test
    void malformedFramingOnAnIetfRouteIsItsDocumented400() {
        String head = "POST /ietf/openapi HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: " + newKey()
                + "\r\nContent-Type: application/json\r\nTransfer-Encoding: ";
        RawHttpClient.Response badChunk = new RawHttpClient(port).send(head + "chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
                new byte[0], Duration.ofSeconds(15));
        HttpHeaders chunkHeaders = new HttpHeaders();
        badChunk.headers().forEach(chunkHeaders::addAll);
        contract.assertDescribesProblem(badChunk.status(), chunkHeaders, badChunk.body());
        assertThat(chunkHeaders.getFirst(HttpHeaders.CONNECTION)).isEqualTo("close");

        RawHttpClient.Response gzip = new RawHttpClient(port).send(head + "gzip\r\n\r\n{}", new byte[0],
                Duration.ofSeconds(15));
        assertThat(gzip.status()).isEqualTo(400);
        JsonNode envelope = json(new String(gzip.body(), StandardCharsets.UTF_8));
        assertThat(contract.errors("/components/responses/IetfBadRequest/content/application~1json/schema",
                envelope)).isEmpty();
        assertThat(contract.document().at("/components/responses/IetfBadRequest/content/application~1json/examples"
                + "/transferEncoding/value/status/message").asString())
                .isEqualTo(envelope.at("/status/message").asString());
    }

    @Test
    void aStalledBodyOnAnIetfRouteIsTheDocumented408() {
        RawHttpClient.Response stalled = new RawHttpClient(port).send(("POST /ietf/openapi HTTP/1.1\r\n"
                + "Host: localhost\r\nIdempotency-Key: " + newKey() + "\r\nContent-Length: 10\r\n\r\n{")
                .getBytes(StandardCharsets.US_ASCII), (out, answered) -> answered.await(), Duration.ofSeconds(15));
        HttpHeaders headers = new HttpHeaders();
        stalled.headers().forEach(headers::addAll);
        contract.assertDescribesProblem(stalled.status(), headers, stalled.body());
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

    private void assertProblemDescribed(WebTestClient.ResponseSpec spec) {
        EntityExchangeResult<byte[]> result = spec.expectBody().returnResult();
        contract.assertDescribesProblem(result.getStatus().value(), result.getResponseHeaders(),
                result.getResponseBody());
    }

    private void assertDescribed(WebTestClient.ResponseSpec spec) {
        EntityExchangeResult<byte[]> result = spec.expectBody().returnResult();
        contract.assertDescribes(result.getStatus().value(), result.getResponseHeaders(), result.getResponseBody());
    }

    private static JsonNode json(String text) {
        return JsonMapper.builder().build().readTree(text);
    }
}
