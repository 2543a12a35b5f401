package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.support.RequestCounts;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;

/** Point 13: with Redis unreachable the gateway fails closed: 503 with Retry-After, upstream not called. */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class RedisUnavailableIntegrationTest {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;
    @Autowired
    MeterRegistry meters;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("spring.data.redis.host", () -> "127.0.0.1");
        registry.add("spring.data.redis.port", RedisUnavailableIntegrationTest::closedPort);
        registry.add("spring.cloud.gateway.server.webflux.routes[0].id", () -> "onboarding");
        registry.add("spring.cloud.gateway.server.webflux.routes[0].uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add("spring.cloud.gateway.server.webflux.routes[0].predicates[0]", () -> "Path=/merchants/**");
        registry.add("spring.cloud.gateway.server.webflux.routes[0].filters[0]", () -> "Idempotency");
    }

    @AfterAll
    static void stopUpstream() {
        upstream.stop();
    }

    @Test
    void redisDownIs503WithRetryAfterAndTheUpstreamIsNotCalled() throws InterruptedException {
        double refused = RequestCounts.count(meters, "onboarding", "store-unavailable");
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202)));
        WebTestClient client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(10)).build();
        for (int attempt = 0; attempt < 3; attempt++) {
            client.post().uri("/merchants").header("Idempotency-Key", "8f1c2d3e4a5b6c7d8e9f0a1b")
                    .contentType(MediaType.APPLICATION_JSON).bodyValue("{}")
                    .exchange()
                    .expectStatus().isEqualTo(503)
                    .expectHeader().valueEquals("Retry-After", "1")
                    .expectHeader().contentType(MediaType.APPLICATION_JSON)
                    .expectBody()
                    .jsonPath("$.status.reason").isEqualTo(503)
                    .jsonPath("$.status.status").isEqualTo("FAILED");
        }
        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
        RequestCounts.awaitCount(meters, "onboarding", "store-unavailable", refused + 3);
    }

    /** The OpenAPI description needs no Redis, and the real 503 is what it documents. */
    @Test
    void the503IsTheOneTheOpenApiDescriptionDocuments() {
        WebTestClient client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(10)).build();
        String yaml = client.get().uri("/idempotency/openapi.yaml").exchange().expectStatus().isOk()
                .expectBody(String.class).returnResult().getResponseBody();
        EntityExchangeResult<byte[]> unavailable = client.post().uri("/merchants")
                .header("Idempotency-Key", "8f1c2d3e4a5b6c7d8e9f0a1b").bodyValue("{}")
                .exchange().expectStatus().isEqualTo(503).expectBody().returnResult();
        new OpenApiContract(yaml).assertDescribes(503, unavailable.getResponseHeaders(),
                unavailable.getResponseBody());
    }

    private static int closedPort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
