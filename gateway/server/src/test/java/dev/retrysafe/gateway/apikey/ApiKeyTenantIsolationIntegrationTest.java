package dev.retrysafe.gateway.apikey;

import static com.github.tomakehurst.wiremock.client.WireMock.absent;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static com.github.tomakehurst.wiremock.stubbing.Scenario.STARTED;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.support.RedisMonitor;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;

/**
 * Issue 6, point 3, through real HTTP with the shipped {@code config/application-apikeys.yml}: the tenant is the
 * API key's owner, and one tenant can never receive another tenant's stored response, nor tell from the answer or
 * the work done that another tenant used an idempotency key.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "spring.config.import=file:../../config/application-apikeys.yml",
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout=10s",
                // Redis's MONITOR compares two requests' commands: no memory check may land in either window.
                "idempotency.store.check-interval=1h"})
class ApiKeyTenantIsolationIntegrationTest {
    static final String ACME_KEY = "acme-" + UUID.randomUUID();
    static final String GLOBEX_KEY = "globex-" + UUID.randomUUID();
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;
    @Autowired
    EmbeddedRedisServer redisServer;
    @Autowired
    ReactiveRedisConnectionFactory redisConnections;

    WebTestClient client;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        // What an operator exports for the sample profile: only the keys' digests.
        registry.add("ACME_API_KEY_SHA256", () -> ApiKeyTenants.sha256Hex(ACME_KEY));
        registry.add("GLOBEX_API_KEY_SHA256", () -> ApiKeyTenants.sha256Hex(GLOBEX_KEY));
        String route = "spring.cloud.gateway.server.webflux.routes[0].";
        registry.add(route + "id", () -> "onboarding");
        registry.add(route + "uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add(route + "predicates[0]", () -> "Path=/merchants/**");
        registry.add(route + "filters[0]", () -> "Idempotency");
    }

    @AfterAll
    static void stopUpstream() {
        upstream.stop();
    }

    @BeforeEach
    void connect() {
        client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(20)).build();
        upstream.resetAll();
    }

    @Test
    void aMissingUnknownOrAmbiguousKeyIs401InTheEnvelopeAndReachesNothing() {
        upstream.stubFor(post(urlEqualTo("/merchants/guarded")).willReturn(aResponse().withStatus(202)));
        List<Consumer<HttpHeaders>> refused = List.of(
                headers -> { },
                headers -> headers.setBearerAuth("not-a-key"),
                headers -> headers.set("X-Api-Key", "not-a-key"),
                headers -> headers.set("X-Api-Key", ""),
                headers -> headers.set("Authorization", "Basic " + ACME_KEY),
                headers -> {
                    headers.setBearerAuth(ACME_KEY);
                    headers.set("X-Api-Key", GLOBEX_KEY);
                });
        for (Consumer<HttpHeaders> credentials : refused) {
            client.post().uri("/merchants/guarded").headers(credentials).header("Idempotency-Key", newKey())
                    .header("X-Tenant-Id", "acme").bodyValue("x").exchange()
                    .expectStatus().isUnauthorized()
                    .expectHeader().valueEquals("WWW-Authenticate", "Bearer")
                    .expectHeader().contentType(MediaType.APPLICATION_JSON)
                    .expectBody()
                    .jsonPath("$.status.status").isEqualTo("FAILED")
                    .jsonPath("$.status.reason").isEqualTo(401)
                    .jsonPath("$.status.message").isEqualTo(ApiKeySecurityConfiguration.UNAUTHORIZED_MESSAGE)
                    .jsonPath("$.status.date").exists();
        }
        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
    }

    @Test
    void eitherHeaderAuthenticatesAndTheKeyIsNotForwarded() {
        upstream.stubFor(post(urlEqualTo("/merchants/forwarded")).willReturn(aResponse().withStatus(202)));

        client.post().uri("/merchants/forwarded").header("Authorization", "Bearer " + ACME_KEY)
                .header("Idempotency-Key", newKey()).bodyValue("x").exchange().expectStatus().isEqualTo(202);
        client.post().uri("/merchants/forwarded").header("X-Api-Key", ACME_KEY)
                .header("Idempotency-Key", newKey()).bodyValue("x").exchange().expectStatus().isEqualTo(202);

        upstream.verify(exactly(2), postRequestedFor(urlEqualTo("/merchants/forwarded"))
                .withHeader("X-Api-Key", absent()).withHeader("Authorization", absent()));
    }

    /** The same body, and another body (which for the same tenant would be a 409). */
    @ParameterizedTest
    @ValueSource(strings = {"{\"legalName\":\"ACME\"}", "{\"legalName\":\"Globex\"}"})
    void anotherTenantWithTheSameKeyGetsItsOwnResultNeverTheStoredOne(String globexBody) {
        String key = newKey();
        String path = "/merchants/same-key/" + globexBody.length();
        stubUniqueAnswer(path);

        String acme = firstWrite(ACME_KEY, path, key, "{\"legalName\":\"ACME\"}");
        String globex = firstWrite(GLOBEX_KEY, path, key, globexBody);

        assertThat(globex).isNotEqualTo(acme);
        send(ACME_KEY, path, key, "{\"legalName\":\"ACME\"}").expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true").expectBody(String.class).isEqualTo(acme);
        send(GLOBEX_KEY, path, key, globexBody).expectStatus().isOk()
                .expectBody(String.class).isEqualTo(globex);
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo(path)));
    }

    @Test
    void aClientSuppliedTenantHeaderCannotReachAnotherTenantsRecords() {
        String key = newKey();
        stubUniqueAnswer("/merchants/spoof");
        String acme = firstWrite(ACME_KEY, "/merchants/spoof", key, "x");

        for (String claimed : List.of("acme", "principal:acme", "header:acme")) {
            String answer = client.post().uri("/merchants/spoof").header("X-Api-Key", GLOBEX_KEY)
                    .header("X-Tenant-Id", claimed).header("Idempotency-Key", key).bodyValue("x").exchange()
                    .expectStatus().is2xxSuccessful()
                    .expectBody(String.class).returnResult().getResponseBody();
            assertThat(answer).isNotEqualTo(acme);
        }
    }

    @Test
    void aKeyAnotherTenantHasInFlightIsNotWaitedFor() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/in-flight")).inScenario("slow-first")
                .whenScenarioStateIs(STARTED).willSetStateTo("answered")
                .willReturn(aResponse().withStatus(202).withBody("acme's").withFixedDelay(2000)));
        upstream.stubFor(post(urlEqualTo("/merchants/in-flight")).inScenario("slow-first")
                .whenScenarioStateIs("answered").willReturn(aResponse().withStatus(202).withBody("globex's")));

        CompletableFuture<String> acme = CompletableFuture.supplyAsync(() ->
                send(ACME_KEY, "/merchants/in-flight", key, "x").expectStatus().isEqualTo(202)
                        .expectBody(String.class).returnResult().getResponseBody());
        // acme's request has reached the upstream, so its record is in flight
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .filter(tick -> upstream.findAll(postRequestedFor(urlEqualTo("/merchants/in-flight"))).size() == 1)
                .next().block(Duration.ofSeconds(10));

        send(GLOBEX_KEY, "/merchants/in-flight", key, "x").expectStatus().isEqualTo(202)
                .expectHeader().doesNotExist("Retry-After")
                .expectBody(String.class).isEqualTo("globex's");
        assertThat(acme).as("acme's request still in flight when globex had its own answer").isNotDone();
        assertThat(acme.join()).isEqualTo("acme's");
    }

    /**
     * "Key used by another tenant" and "fresh key" must be indistinguishable: same status, same response headers,
     * and the same work in Redis, command by command (MONITOR, script internals included), so neither the answer
     * nor its timing can tell them apart. A wall-clock comparison would only measure noise.
     */
    @Test
    void aKeyUsedByAnotherTenantDoesTheSameWorkAsAFreshKey() throws Exception {
        stubUniqueAnswer("/merchants/probe");
        firstWrite(ACME_KEY, "/merchants/probe", newKey(), "{\"legalName\":\"ACME\"}"); // scripts loaded

        try (RedisMonitor monitor = new RedisMonitor(redisServer.port(), new ReactiveStringRedisTemplate(redisConnections))) {
            for (String body : List.of("{\"legalName\":\"ACME\"}", "{\"legalName\":\"Globex\"}")) {
                String usedByAcme = newKey();
                firstWrite(ACME_KEY, "/merchants/probe", usedByAcme, "{\"legalName\":\"ACME\"}");

                Observed used = observe(monitor, usedByAcme, body);
                Observed fresh = observe(monitor, newKey(), body);

                assertThat(used.status()).isEqualTo(fresh.status()).isEqualTo(202);
                assertThat(used.headerNames()).isEqualTo(fresh.headerNames()).doesNotContain("idempotency-replayed");
                assertThat(used.redisWork()).as("Redis commands, key used by acme vs fresh key")
                        .isEqualTo(fresh.redisWork()).isNotEmpty();
            }
        }
        upstream.verify(exactly(7), postRequestedFor(urlEqualTo("/merchants/probe")));
    }

    /** What globex's request for a key looked like from outside and inside. */
    private record Observed(int status, Set<String> headerNames, List<String> redisWork) {
    }

    private Observed observe(RedisMonitor monitor, String key, String body) throws InterruptedException {
        EntityExchangeResult<?>[] result = new EntityExchangeResult<?>[1];
        List<String> commands = monitor.during(() -> result[0] = send(GLOBEX_KEY, "/merchants/probe", key, body)
                .expectBody().returnResult(), 2);
        Set<String> names = new TreeSet<>();
        result[0].getResponseHeaders().forEach((name, values) -> names.add(name.toLowerCase()));
        return new Observed(result[0].getStatus().value(), names, RedisMonitor.shape(commands));
    }

    private static void stubUniqueAnswer(String path) {
        upstream.stubFor(post(urlEqualTo(path)).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withTransformers("response-template")
                .withBody("{\"processId\":\"{{randomValue type='UUID'}}\"}")));
    }

    /** A request that must be forwarded as a first write: 202 from the upstream, not a replay. */
    private String firstWrite(String apiKey, String path, String key, String body) {
        return send(apiKey, path, key, body).expectStatus().isEqualTo(202)
                .expectHeader().doesNotExist("Idempotency-Replayed")
                .expectBody(String.class).returnResult().getResponseBody();
    }

    private WebTestClient.ResponseSpec send(String apiKey, String path, String key, String body) {
        return client.post().uri(path).header("X-Api-Key", apiKey).header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
    }

    private static String newKey() {
        return UUID.randomUUID().toString();
    }
}
