package dev.retrysafe.gateway.idempotency.operator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.support.AcceptingUpstream;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * An operator releases a record while its request is still at the upstream; the upstream answers afterwards. The
 * former owner's result must not bring the record back (it is fenced, counted and logged), and the client's retry is
 * forwarded as the fresh request the operator meant it to be.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                // Shared two-core machines: a cold first call can take over the default second.
                "idempotency.store-timeout=5s",
                "management.server.port=0",
                "management.endpoints.web.exposure.include=health,idempotency",
                "idempotency.operator.username=ops",
                "idempotency.operator.password=s3cret"})
@ExtendWith(OutputCaptureExtension.class)
class OperatorReleaseFencingIntegrationTest {
    static final AcceptingUpstream upstream = new AcceptingUpstream();
    static final Duration BOUND = Duration.ofSeconds(30);

    @LocalServerPort
    int port;
    @LocalManagementPort
    int managementPort;
    @Autowired
    MeterRegistry meters;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        String route = "spring.cloud.gateway.server.webflux.routes[0].";
        registry.add(route + "id", () -> "held");
        registry.add(route + "uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add(route + "predicates[0]", () -> "Path=/held/**");
        registry.add(route + "filters[0].name", () -> "Idempotency");
        // The upstream's answer is held by the test, never cut short by a timeout.
        registry.add(route + "metadata.response-timeout", () -> 120_000);
    }

    @Test
    void theFormerOwnersLateResultDoesNotRecreateTheRecordAndTheRetryIsForwardedAfresh(CapturedOutput output) {
        String key = UUID.randomUUID().toString();
        String hash = new IdempotencyScope("", "held", new IdempotencyKey(key)).hash();
        WebClient client = WebClient.create("http://127.0.0.1:" + port);
        WebTestClient management = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + managementPort)
                .responseTimeout(BOUND).build();
        Runnable answer = upstream.holdAnswers();
        try {
            Mono<ResponseEntity<String>> first = client.post().uri("/held/payments").header("Idempotency-Key", key)
                    .bodyValue("{\"amount\":1}").retrieve().toEntity(String.class).cache();
            first.subscribe();
            await(() -> upstream.received(key) == 1);

            management.post().uri("/actuator/idempotency/{hash}", hash).headers(h -> h.setBasicAuth("ops", "s3cret"))
                    .contentType(MediaType.APPLICATION_JSON)
                    .bodyValue(Map.of("action", "release", "reason", "backend shows nothing; let the client retry"))
                    .exchange()
                    .expectStatus().isOk()
                    .expectBody().jsonPath("$.previousState").isEqualTo("IN_FLIGHT");

            answer.run();
            assertThat(first.block(BOUND).getStatusCode().value()).as("the client still gets the upstream's answer")
                    .isEqualTo(202);
        } finally {
            answer.run();
        }
        await(() -> fenced() == 1);
        assertThat(output).contains("Response (status 202) for scope " + hash + " not stored: an operator released "
                + "the record while this gateway still forwarded the request");
        management.get().uri("/actuator/idempotency/{hash}", hash).headers(h -> h.setBasicAuth("ops", "s3cret"))
                .exchange().expectStatus().isNotFound();

        ResponseEntity<String> retry = client.post().uri("/held/payments").header("Idempotency-Key", key)
                .bodyValue("{\"amount\":1}").retrieve().toEntity(String.class).block(BOUND);
        assertThat(retry.getStatusCode().value()).isEqualTo(202);
        assertThat(retry.getHeaders().containsHeader("Idempotency-Replayed")).as("forwarded, not replayed").isFalse();
        assertThat(upstream.received(key)).isEqualTo(2);
        assertThat(fenced()).isEqualTo(1);
        management.get().uri("/actuator/idempotency/{hash}", hash).headers(h -> h.setBasicAuth("ops", "s3cret"))
                .exchange().expectStatus().isOk()
                .expectBody().jsonPath("$.state").isEqualTo("COMPLETED");
    }

    private double fenced() {
        return meters.find("idempotency.events").tag("event", "store-fenced").tag("route", "held").counters().stream()
                .mapToDouble(c -> c.count()).sum();
    }

    /** Polls a condition, bounded: on a busy machine things take long, never forever. */
    private static void await(BooleanSupplier condition) {
        Boolean met = Flux.interval(Duration.ZERO, Duration.ofMillis(20)).onBackpressureDrop()
                .map(tick -> condition.getAsBoolean()).filter(Boolean::booleanValue).next().block(BOUND);
        assertThat(met).isTrue();
    }
}
