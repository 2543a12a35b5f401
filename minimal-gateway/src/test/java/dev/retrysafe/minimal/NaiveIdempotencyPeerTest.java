package dev.retrysafe.minimal;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;

import com.github.tomakehurst.wiremock.WireMockServer;
import java.io.IOException;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.http.MediaType;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import redis.embedded.RedisServer;

/**
 * The naive filter the peer benchmark measures ours against does what it claims, so that its numbers are those of a
 * working filter: a first write is forwarded and stored, its retry replayed without the backend, a write under way
 * refused. (And, being naive, another payload under the same key is replayed too: it has no fingerprint.)
 */
// Closed after the class: a cached context outliving the Redis its @AfterAll stops would keep reconnecting, and
// its reconnect warnings would land in whatever test runs next (ConfigurationMistakesTest counts stack frames).
@DirtiesContext
@SpringBootTest(classes = MinimalGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class NaiveIdempotencyPeerTest {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());
    static final RedisServer redis = LocalRedis.start();

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;

    @Autowired
    ReactiveStringRedisTemplate strings;

    WebTestClient client;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        registry.add("spring.data.redis.port", () -> redis.ports().get(0));
        String routes = "spring.cloud.gateway.server.webflux.routes";
        registry.add(routes + "[0].id", () -> "naive");
        registry.add(routes + "[0].uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add(routes + "[0].predicates[0]", () -> "Path=/naive/**");
        registry.add(routes + "[0].filters[0].name", () -> "NaiveIdempotency");
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
        upstream.stubFor(post(urlEqualTo("/naive/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody("{\"processId\":\"p-1\"}")));
    }

    @Test
    void aRetryIsReplayedWithoutTheBackend() {
        String key = UUID.randomUUID().toString();
        send(key, "{\"legalName\":\"ACME\"}").expectStatus().isEqualTo(202)
                .expectHeader().doesNotExist("Idempotency-Replayed");
        send(key, "{\"legalName\":\"Globex\"}").expectStatus().isEqualTo(202)
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody().json("{\"processId\":\"p-1\"}");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/naive/merchants")));
    }

    @Test
    void aWriteUnderWayIsRefused() {
        String key = UUID.randomUUID().toString();
        strings.opsForValue().set("naive-idempotency:" + key, "in-flight").block(Duration.ofSeconds(10));
        send(key, "{}").expectStatus().isEqualTo(409);
        upstream.verify(exactly(0), postRequestedFor(urlEqualTo("/naive/merchants")));
    }

    @Test
    void aMissingKeyIsRefused() {
        client.post().uri("/naive/merchants").contentType(MediaType.APPLICATION_JSON).bodyValue("{}").exchange()
                .expectStatus().isEqualTo(422);
        upstream.verify(exactly(0), postRequestedFor(urlEqualTo("/naive/merchants")));
    }

    private WebTestClient.ResponseSpec send(String key, String body) {
        return client.post().uri("/naive/merchants").header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
    }
}
