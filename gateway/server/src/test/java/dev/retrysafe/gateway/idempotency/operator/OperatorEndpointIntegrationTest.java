package dev.retrysafe.gateway.idempotency.operator;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.support.SeededRecord;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;

/** The operator API: on the management port only, behind HTTP Basic, and every resolution logged with who and why. */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout=800ms",
                "management.server.port=0",
                "management.endpoints.web.exposure.include=health,idempotency",
                "idempotency.operator.username=ops",
                "idempotency.operator.password=s3cret",
                "idempotency.tenant-header=X-Tenant-Id"})
@ExtendWith(OutputCaptureExtension.class)
class OperatorEndpointIntegrationTest {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;
    @LocalManagementPort
    int managementPort;
    @Autowired
    RecordInspector inspector;
    @Autowired
    ReactiveRedisConnectionFactory connections;

    WebTestClient gateway;
    WebTestClient management;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        String prefix = "spring.cloud.gateway.server.webflux.routes[0].";
        registry.add(prefix + "id", () -> "onboarding");
        registry.add(prefix + "uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add(prefix + "predicates[0]", () -> "Path=/merchants/**");
        registry.add(prefix + "filters[0].name", () -> "Idempotency");
        String slow = "spring.cloud.gateway.server.webflux.routes[1].";
        registry.add(slow + "id", () -> "slow");
        registry.add(slow + "uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add(slow + "predicates[0]", () -> "Path=/slow/**");
        registry.add(slow + "filters[0].name", () -> "Idempotency");
        registry.add(slow + "metadata.response-timeout", () -> 20000);
    }

    @AfterAll
    static void stopUpstream() {
        upstream.stop();
    }

    @BeforeEach
    void clients() {
        gateway = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(15)).build();
        management = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + managementPort)
                .responseTimeout(Duration.ofSeconds(15)).build();
    }

    /** Sends a request whose upstream answers too late: the record becomes UNCERTAIN. */
    String uncertainKey(String path) {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo(path)).willReturn(aResponse().withStatus(202).withFixedDelay(3000)));
        gateway.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(504);
        return key;
    }

    static String hash(String key) {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(key)).hash();
    }

    @Test
    void theOperatorApiIsNotOnThePublicPortAndNeedsCredentials() {
        gateway.get().uri("/actuator/idempotency").exchange().expectStatus().isNotFound();
        management.get().uri("/actuator/idempotency").exchange().expectStatus().isUnauthorized();
        management.get().uri("/actuator/idempotency").headers(h -> h.setBasicAuth("ops", "wrong"))
                .exchange().expectStatus().isUnauthorized();
        management.get().uri("/actuator/health").exchange().expectStatus().isOk();
    }

    @Test
    void lookUpAndListUncertainRecordsWithoutTheirBodies() {
        String key = uncertainKey("/merchants/look");
        management.get().uri(b -> b.path("/actuator/idempotency").queryParam("route", "onboarding")
                        .queryParam("key", key).build())
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.scopeHash").isEqualTo(hash(key))
                .jsonPath("$.state").isEqualTo("UNCERTAIN")
                .jsonPath("$.route").isEqualTo("onboarding")
                .jsonPath("$.operation").isEqualTo("onboarding")
                .jsonPath("$.method").isEqualTo("POST")
                .jsonPath("$.path").isEqualTo("/merchants/look")
                .jsonPath("$.upstream").isEqualTo("http://127.0.0.1:" + upstream.port())
                .jsonPath("$.uncertainReason").value(String.class, r -> assertThat(r).contains("response timeout"))
                .jsonPath("$.response").doesNotExist();

        management.get().uri("/actuator/idempotency?state=UNCERTAIN&route=onboarding")
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.records[?(@.scopeHash == '" + hash(key) + "')].state").isEqualTo("UNCERTAIN");
    }

    WebTestClient.BodyContentSpec records(String query) {
        return management.get().uri("/actuator/idempotency?" + query).headers(h -> h.setBasicAuth("ops", "s3cret"))
                .exchange().expectStatus().isOk().expectBody();
    }

    @Test
    void aRecordShowsTheOperationThatScopesItAndTheRouteThatReservedItAndIsFoundAndListedByEither() {
        // Written by a route onboarding-v2 whose operation is merchants-op: the record is scoped by the operation.
        SeededRecord seeded = SeededRecord.withNewKey("header:acme", "merchants-op", "onboarding-v2", "/merchants/v2");
        String hash = seeded.writeUncertain(connections);
        String key = seeded.key();
        String listed = "$.records[?(@.scopeHash == '" + hash + "')]";

        records("operation=merchants-op&tenant=header:acme&key=" + key)
                .jsonPath("$.scopeHash").isEqualTo(hash)
                .jsonPath("$.operation").isEqualTo("merchants-op")
                .jsonPath("$.route").isEqualTo("onboarding-v2")
                .jsonPath("$.state").isEqualTo("UNCERTAIN")
                .jsonPath("$.path").isEqualTo("/merchants/v2");
        // route alone is the operation, as before routes named one; the route id does not scope the record.
        records("route=merchants-op&tenant=header:acme&key=" + key).jsonPath("$.scopeHash").isEqualTo(hash);
        management.get().uri("/actuator/idempotency?route=onboarding-v2&tenant=header:acme&key=" + key)
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isNotFound();
        management.get().uri("/actuator/idempotency?tenant=header:acme&key=" + key)
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isBadRequest()
                .expectBody().jsonPath("$.error").isEqualTo("operation (or route) is required with key");

        records("state=UNCERTAIN&operation=merchants-op").jsonPath(listed + ".route").isEqualTo("onboarding-v2");
        records("state=UNCERTAIN&route=onboarding-v2").jsonPath(listed + ".operation").isEqualTo("merchants-op");
        records("state=UNCERTAIN&operation=onboarding-v2").jsonPath(listed).isEmpty();
        records("state=UNCERTAIN&route=merchants-op").jsonPath(listed).isEmpty();
        records("state=UNCERTAIN&route=onboarding-v2&operation=merchants-op&tenant=header:acme")
                .jsonPath(listed + ".state").isEqualTo("UNCERTAIN");
    }

    @Test
    void aRecordWrittenBeforeRoutesNamedAnOperationShowsItsRouteAsItsOperation() {
        SeededRecord seeded = SeededRecord.withNewKey("", "legacy-route", null, "/merchants/legacy");
        String hash = seeded.writeUncertain(connections);
        String key = seeded.key();
        String listed = "$.records[?(@.scopeHash == '" + hash + "')]";

        records("route=legacy-route&key=" + key)
                .jsonPath("$.route").isEqualTo("legacy-route")
                .jsonPath("$.operation").isEqualTo("legacy-route");
        records("state=UNCERTAIN&route=legacy-route").jsonPath(listed + ".operation").isEqualTo("legacy-route");
        records("state=UNCERTAIN&operation=legacy-route").jsonPath(listed + ".route").isEqualTo("legacy-route");
    }

    @Test
    void longInFlightRecordsAreListedPerRouteAndTenant() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/slow/merchants")).willReturn(aResponse().withStatus(202).withFixedDelay(4000)));
        org.springframework.web.reactive.function.client.WebClient.create("http://127.0.0.1:" + port).post()
                .uri("/slow/merchants").header("Idempotency-Key", key).header("X-Tenant-Id", "acme").bodyValue("x")
                .retrieve().toBodilessEntity().onErrorResume(e -> reactor.core.publisher.Mono.empty()).subscribe();
        reactor.core.publisher.Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .map(t -> upstream.countRequestsMatching(postRequestedFor(urlEqualTo("/slow/merchants")).build()).getCount())
                .filter(n -> n > 0).next().block(Duration.ofSeconds(10));
        String hash = new IdempotencyScope("header:acme", "slow", new IdempotencyKey(key)).hash();

        management.get().uri("/actuator/idempotency?state=IN_FLIGHT&route=slow&tenant=header:acme&inFlightOlderThanSeconds=0")
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.records[?(@.scopeHash == '" + hash + "')].state").isEqualTo("IN_FLIGHT");
        management.get().uri("/actuator/idempotency?state=IN_FLIGHT&route=slow&tenant=header:other&inFlightOlderThanSeconds=0")
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.records[?(@.scopeHash == '" + hash + "')]").isEmpty();
        // A request in flight for less than the threshold is normal, not listed.
        management.get().uri("/actuator/idempotency?state=IN_FLIGHT&route=slow&tenant=header:acme&inFlightOlderThanSeconds=3600")
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.records[?(@.scopeHash == '" + hash + "')]").isEmpty();
    }

    @Test
    void completingAnUncertainRecordMakesRetriesReplayTheReconciledResult(CapturedOutput output) {
        String key = uncertainKey("/merchants/reconcile");
        management.post().uri("/actuator/idempotency/{hash}", hash(key))
                .headers(h -> h.setBasicAuth("ops", "s3cret")).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Map.of("action", "complete", "status", 202, "contentType", "application/json",
                        "body", "{\"processId\":\"p-reconciled\"}", "reason", "backend ticket 42 shows it was created"))
                .exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.previousState").isEqualTo("UNCERTAIN");

        gateway.post().uri("/merchants/reconcile").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo("{\"processId\":\"p-reconciled\"}");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/reconcile")));
        assertThat(output).contains("OPERATOR ops complete scope " + hash(key) + " (was UNCERTAIN): backend ticket 42");

        management.get().uri("/actuator/idempotency/{hash}?includeBody=true", hash(key))
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.state").isEqualTo("COMPLETED")
                .jsonPath("$.resolvedBy").isEqualTo("ops")
                .jsonPath("$.response.body").isEqualTo("{\"processId\":\"p-reconciled\"}");
    }

    @Test
    void releasingAnUncertainRecordLetsTheNextRetryThrough(CapturedOutput output) {
        String key = uncertainKey("/merchants/release");
        upstream.stubFor(post(urlEqualTo("/merchants/release")).willReturn(aResponse().withStatus(202).withBody("again")));
        management.post().uri("/actuator/idempotency/{hash}", hash(key))
                .headers(h -> h.setBasicAuth("ops", "s3cret")).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Map.of("action", "release", "reason", "backend confirms nothing was created"))
                .exchange().expectStatus().isOk();

        gateway.post().uri("/merchants/release").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202).expectBody(String.class).isEqualTo("again");
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo("/merchants/release")));
        assertThat(output).contains("OPERATOR ops release scope " + hash(key));
    }

    @Test
    void aResolutionNeedsAReasonAndOnlyUnsettledRecordsCanBeResolved() {
        String key = uncertainKey("/merchants/reasons");
        management.post().uri("/actuator/idempotency/{hash}", hash(key))
                .headers(h -> h.setBasicAuth("ops", "s3cret")).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Map.of("action", "release")).exchange()
                .expectStatus().isBadRequest();
        management.post().uri("/actuator/idempotency/{hash}", "no-such-record")
                .headers(h -> h.setBasicAuth("ops", "s3cret")).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Map.of("action", "release", "reason", "test")).exchange()
                .expectStatus().isNotFound();
    }

    static Stream<Arguments> harmfulSettlements() {
        String forged = "OPERATOR ops release scope forged (was UNCERTAIN): forged";
        return Stream.of(
                Arguments.of("contentType", Map.of("action", "complete", "status", 202, "reason", "created",
                        "contentType", "application/json\r\nX-Forged: 1")),
                Arguments.of("contentType", Map.of("action", "complete", "status", 202, "reason", "created",
                        "contentType", "text/plain; profile=\"p\r\nX-Forged: 1\"")),
                Arguments.of("reason", Map.of("action", "complete", "status", 202, "reason", "created\n" + forged)),
                Arguments.of("reason", Map.of("action", "release", "reason", "released\r\n" + forged)));
    }

    @ParameterizedTest
    @MethodSource("harmfulSettlements")
    void aSettlementThatWouldBreakReplaysOrForgeLogLinesIs400NamingTheFieldAndStoresNothing(String field,
            Map<String, Object> settlement, CapturedOutput output) {
        String key = uncertainKey("/merchants/harmful-" + field);
        management.post().uri("/actuator/idempotency/{hash}", hash(key))
                .headers(h -> h.setBasicAuth("ops", "s3cret")).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(settlement).exchange()
                .expectStatus().isBadRequest()
                .expectBody()
                .jsonPath("$.field").isEqualTo(field)
                .jsonPath("$.error").value(String.class, error -> assertThat(error).startsWith(field));

        management.get().uri("/actuator/idempotency/{hash}", hash(key))
                .headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.state").isEqualTo("UNCERTAIN")
                .jsonPath("$.resolvedBy").doesNotExist();
        assertThat(output).doesNotContain("forged").doesNotContain("OPERATOR ops");
    }

    @Test
    void aStoredResponseHttpCannotCarryIsAnswered409NeverA5xxAndNotSentAgain(CapturedOutput output) {
        String key = uncertainKey("/merchants/unwritable");
        // What the operator API stored before it checked its input; a hand edit in Redis does the same.
        StoredResponse unwritable = new StoredResponse(202,
                List.of(new ResponseHeader("Content-Type", "application/json\r\nX-Forged: 1")),
                "{\"processId\":\"p-1\"}".getBytes(StandardCharsets.UTF_8), false);
        assertThat(inspector.complete(hash(key), unwritable, Duration.ofMinutes(5), "ops", "unchecked")
                .block(Duration.ofSeconds(5))).isEqualTo("UNCERTAIN");

        for (int retry = 0; retry < 2; retry++) {
            gateway.post().uri("/merchants/unwritable").header("Idempotency-Key", key).bodyValue("x").exchange()
                    .expectStatus().isEqualTo(409)
                    .expectHeader().doesNotExist("X-Forged")
                    .expectHeader().doesNotExist("Idempotency-Replayed")
                    .expectBody()
                    .jsonPath("$.status.reason").isEqualTo(409)
                    .jsonPath("$.status.message").isEqualTo(GatewayError.replayUnreadable(202).message());
        }
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/unwritable")));
        assertThat(output).contains("Stored response for scope " + hash(key) + " cannot be read")
                .contains("its Content-Type header has a value HTTP cannot carry").doesNotContain("X-Forged: 1");
    }
}
