package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static org.assertj.core.api.Assertions.assertThat;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import dev.retrysafe.gateway.support.RequestCounts;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;

/** Opt-in: with {@code idempotency.store-unavailable=forward} requests pass unprotected while Redis is away. */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "idempotency.store-unavailable=forward")
class RedisUnavailableForwardIntegrationTest {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("spring.data.redis.host", () -> "127.0.0.1");
        registry.add("spring.data.redis.port", RedisUnavailableForwardIntegrationTest::closedPort);
        registry.add("spring.cloud.gateway.server.webflux.routes[0].id", () -> "onboarding");
        registry.add("spring.cloud.gateway.server.webflux.routes[0].uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add("spring.cloud.gateway.server.webflux.routes[0].predicates[0]", () -> "Path=/merchants/**");
        registry.add("spring.cloud.gateway.server.webflux.routes[0].filters[0]", () -> "Idempotency");
    }

    @AfterAll
    static void stopUpstream() {
        upstream.stop();
    }

    @Autowired
    IdempotencyEvents events;
    @Autowired
    MeterRegistry meters;

    @Test
    void redisDownForwardsUnprotectedAndCountsIt() throws InterruptedException {
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202).withBody("created")));
        WebTestClient client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(10)).build();
        double before = events.count("forwarded-unprotected");
        double requests = RequestCounts.count(meters, "onboarding", "forwarded-unprotected");
        for (int attempt = 0; attempt < 2; attempt++) {
            client.post().uri("/merchants").header("Idempotency-Key", "8f1c2d3e4a5b6c7d8e9f0a1b")
                    .contentType(MediaType.APPLICATION_JSON).bodyValue("{}")
                    .exchange()
                    .expectStatus().isEqualTo(202)
                    .expectBody(String.class).isEqualTo("created");
        }
        // Unprotected means exactly that: both reached the upstream.
        upstream.verify(exactly(2), postRequestedFor(anyUrl()).withRequestBody(equalTo("{}")));
        assertThat(events.count("forwarded-unprotected") - before).isEqualTo(2);
        RequestCounts.awaitCount(meters, "onboarding", "forwarded-unprotected", requests + 2);
    }

    private static int closedPort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
