package dev.retrysafe.gateway.faults;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.support.GatewayProcess;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A second gateway, a real separate JVM sharing this test's Redis, is killed with SIGKILL while its request is with
 * the upstream. Its lease stops being renewed and lapses; the retry through this gateway finds the record
 * UNCERTAIN and does not send the request again.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "idempotency.in-flight-lease=1s",
                "idempotency.in-flight-wait=3s"})
class KilledGatewayIntegrationTest {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;
    @Autowired
    EmbeddedRedisServer redis;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        for (String arg : routeArgs()) {
            String[] nameValue = arg.substring(2).split("=", 2);
            registry.add(nameValue[0], () -> nameValue[1]);
        }
    }

    /** The same route, with the same id, on both gateways: the scope includes the route id. */
    static List<String> routeArgs() {
        String prefix = "--spring.cloud.gateway.server.webflux.routes[0].";
        return List.of(prefix + "id=onboarding", prefix + "uri=http://127.0.0.1:" + upstream.port(),
                prefix + "predicates[0]=Path=/merchants/**", prefix + "filters[0].name=Idempotency");
    }

    @AfterAll
    static void stopUpstream() {
        upstream.stop();
    }

    @Test
    void aGatewayKilledMidRequestLeavesAnUncertainRecordNotAFreeKey() throws Exception {
        upstream.stubFor(post(urlEqualTo("/merchants")).willReturn(aResponse().withStatus(202)
                .withBody("too late").withFixedDelay(60_000)));
        try (GatewayProcess other = GatewayProcess.start("killed-gateway", otherSettings())) {
            String key = UUID.randomUUID().toString();
            WebClient.create(other.baseUrl()).post().uri("/merchants").header("Idempotency-Key", key)
                    .bodyValue("{\"legalName\":\"ACME\"}").retrieve().toBodilessEntity()
                    .onErrorResume(e -> Mono.empty()).subscribe();
            Flux.interval(Duration.ofMillis(20)).onBackpressureDrop()
                    .map(t -> upstream.countRequestsMatching(postRequestedFor(urlEqualTo("/merchants")).build()).getCount())
                    .filter(n -> n > 0).next().block(Duration.ofSeconds(30));

            assertThat(other.kill()).as("killed by SIGKILL").isEqualTo(137);

            WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(Duration.ofSeconds(20))
                    .build().post().uri("/merchants").header("Idempotency-Key", key)
                    .bodyValue("{\"legalName\":\"ACME\"}").exchange()
                    .expectStatus().isEqualTo(409)
                    .expectHeader().exists("Retry-After")
                    .expectBody().jsonPath("$.status.message").value(String.class,
                            m -> assertThat(m).contains("outcome of the original request"));
            upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants")));
        }
    }

    private Map<String, String> otherSettings() {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("spring.data.redis.host", "127.0.0.1");
        settings.put("spring.data.redis.port", Integer.toString(redis.port()));
        settings.put("idempotency.in-flight-lease", "1s");
        for (String arg : routeArgs()) {
            String[] nameValue = arg.substring(2).split("=", 2);
            settings.put(nameValue[0], nameValue[1]);
        }
        return settings;
    }
}
