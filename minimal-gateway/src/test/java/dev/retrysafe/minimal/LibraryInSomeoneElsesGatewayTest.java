package dev.retrysafe.minimal;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.util.ClassUtils;
import redis.embedded.RedisServer;

/**
 * The filter added as a library to a bare Spring Cloud Gateway application, as a platform team would: it guards
 * writes there as it does in our server, beside Spring Cloud Gateway's own RequestRateLimiter on the same Redis,
 * and brings none of our server along (no security chain, no application class, nothing added to responses).
 */
// Closed after the class: a cached context outliving the Redis its @AfterAll stops would keep reconnecting, and
// its reconnect warnings would land in whatever test runs next (ConfigurationMistakesTest counts stack frames).
@DirtiesContext
@SpringBootTest(classes = MinimalGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class LibraryInSomeoneElsesGatewayTest {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());
    static final RedisServer redis = LocalRedis.start();

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;

    WebTestClient client;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        registry.add("spring.data.redis.port", () -> redis.ports().get(0));
        String uri = "http://127.0.0.1:" + upstream.port();
        String routes = "spring.cloud.gateway.server.webflux.routes";
        registry.add(routes + "[0].id", () -> "plain");
        registry.add(routes + "[0].uri", () -> uri);
        registry.add(routes + "[0].predicates[0]", () -> "Path=/plain/**");
        registry.add(routes + "[1].id", () -> "guarded");
        registry.add(routes + "[1].uri", () -> uri);
        registry.add(routes + "[1].predicates[0]", () -> "Path=/merchants/**");
        registry.add(routes + "[1].filters[0].name", () -> "Idempotency");
        registry.add(routes + "[1].filters[0].args.unordered-arrays", () -> "integrations,paymentMethods,sites");
        registry.add(routes + "[2].id", () -> "limited");
        registry.add(routes + "[2].uri", () -> uri);
        registry.add(routes + "[2].predicates[0]", () -> "Path=/limited/**");
        registry.add(routes + "[2].filters[0].name", () -> "RequestRateLimiter");
        registry.add(routes + "[2].filters[0].args.redis-rate-limiter.replenishRate", () -> "1000");
        registry.add(routes + "[2].filters[0].args.redis-rate-limiter.burstCapacity", () -> "1000");
    }

    @AfterAll
    static void stop() throws IOException {
        upstream.stop();
        redis.stop();
    }

    @BeforeEach
    void connect() {
        client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(20)).build();
        upstream.resetAll();
        upstream.stubFor(post(urlEqualTo("/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withHeader("Location", "/processes/p-1")
                .withBody("{\"processId\":\"p-1\"}")));
        upstream.stubFor(post(urlEqualTo("/plain/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody("{\"processId\":\"p-2\"}")));
        upstream.stubFor(post(urlEqualTo("/limited/merchants")).willReturn(aResponse().withStatus(202)));
    }

    @Test
    void aRetryIsReplayedAndTheBackendCalledOnce() {
        String key = UUID.randomUUID().toString();
        send("/merchants", key, "{\"legalName\":\"ACME\",\"sites\":[\"a\",\"b\"]}")
                .expectStatus().isEqualTo(202)
                .expectHeader().valueEquals("Location", "/processes/p-1");
        send("/merchants", key, "{\"sites\":[\"b\",\"a\"],\"legalName\":\"ACME\"}")
                .expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectHeader().doesNotExist("Location")
                .expectBody().json("{\"processId\":\"p-1\"}");
        send("/merchants", key, "{\"legalName\":\"Globex\"}")
                .expectStatus().isEqualTo(409);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants")));
    }

    @Test
    void aMissingKeyIsRefusedInTheEnvelope() {
        client.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON).bodyValue("{}").exchange()
                .expectStatus().isEqualTo(422)
                .expectBody().jsonPath("$.status.status").isEqualTo("FAILED");
        upstream.verify(exactly(0), postRequestedFor(urlEqualTo("/merchants")));
    }

    @Test
    void springCloudGatewaysOwnRateLimiterWorksBesideItOnTheSameRedis() {
        send("/limited/merchants", UUID.randomUUID().toString(), "{}")
                .expectStatus().isEqualTo(202)
                .expectHeader().exists("X-RateLimit-Remaining");
    }

    @Test
    void noneOfOurServerComesAlong() {
        assertThat(ClassUtils.isPresent("org.springframework.security.web.server.SecurityWebFilterChain", null))
                .as("no security on the classpath").isFalse();
        // The library jar carries none of the runnable server: not its application class, its operator security, its
        // API keys, its embedded Redis, nor its environment post-processor (which would move the management port).
        for (String serverClass : List.of("dev.retrysafe.gateway.IdempotencyGatewayApplication",
                "dev.retrysafe.gateway.OperatorSecurityConfiguration",
                "dev.retrysafe.gateway.LoopbackManagementAddress",
                "dev.retrysafe.gateway.apikey.ApiKeySecurityConfiguration",
                "dev.retrysafe.gateway.embedded.EmbeddedRedisAutoConfiguration")) {
            assertThat(ClassUtils.isPresent(serverClass, null)).as(serverClass).isFalse();
        }
        send("/plain/merchants", UUID.randomUUID().toString(), "{}")
                .expectStatus().isEqualTo(202)
                .expectHeader().doesNotExist("X-Frame-Options")
                .expectHeader().doesNotExist("Cache-Control")
                .expectHeader().doesNotExist("Idempotency-Replayed");
    }

    private WebTestClient.ResponseSpec send(String path, String key, String body) {
        return client.post().uri(path).header("Idempotency-Key", key).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(body).exchange();
    }
}
