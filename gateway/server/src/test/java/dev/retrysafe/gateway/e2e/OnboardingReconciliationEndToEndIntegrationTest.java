package dev.retrysafe.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.support.TcpHop;
import dev.retrysafe.onboarding.OnboardingBackendApplication;
import dev.retrysafe.onboarding.OnboardingLedger;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The shipped Onboarding route's reconciliation ({@code config/application.yml}: {@code reconcile-uri} by the
 * forwarded key, {@code reconcile-after} left to its default, twice the response timeout) against the real sample
 * backend: the backend accepts the write but its 202 is held on the way back past the gateway's response timeout, so
 * the record is UNCERTAIN; the lookup then finds the write, and the client's retry gets its process id. The backend's
 * lookup wants a bearer token, given to both as a deployment would ({@code ONBOARDING_LOOKUP_TOKEN}, not the
 * development default): the route's {@code reconcile-headers} send it.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "spring.config.additional-location=file:../../config/",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "management.server.port=0",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout=1s",
                "idempotency.record-counts.enabled=false"})
@ActiveProfiles("local")
class OnboardingReconciliationEndToEndIntegrationTest {
    static final String LOOKUP_TOKEN = "e2e-lookup-token-" + UUID.randomUUID();
    static final ConfigurableApplicationContext backend = OnboardingBackendApplication.start("--server.port=0",
            "--onboarding.lookup-token=" + LOOKUP_TOKEN);
    static final TcpHop link = hop();
    static final ParameterizedTypeReference<Map<String, Object>> JSON = new ParameterizedTypeReference<>() {};

    @LocalServerPort
    int port;

    static TcpHop hop() {
        try {
            return new TcpHop(backend.getEnvironment().getRequiredProperty("local.server.port", Integer.class),
                    () -> (bytes, length) -> { });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @DynamicPropertySource
    static void backendUri(DynamicPropertyRegistry registry) {
        registry.add("onboarding.uri", () -> "http://127.0.0.1:" + link.port());
        // As the environment variable a deployment sets, which config/application.yml's placeholder reads.
        registry.add("ONBOARDING_LOOKUP_TOKEN", () -> LOOKUP_TOKEN);
    }

    @AfterAll
    static void stop() {
        link.close();
        backend.close();
    }

    @Test
    void aWriteWhoseAnswerWasLostIsCompletedFromTheBackendsLookupAndItsRetryGetsTheProcessId() {
        String key = UUID.randomUUID().toString();
        String body = "{\"legalName\":\"ACME\",\"taxId\":\"ACME12345\",\"email\":\"a@acme.example\"}";
        OnboardingLedger ledger = backend.getBean(OnboardingLedger.class);

        link.holdFromTarget(Duration.ofMinutes(5));
        ResponseEntity<Map<String, Object>> lost = create(key, body);
        link.releaseFromTarget();
        assertThat(lost.getStatusCode().value()).as("the backend's 202 never came back in time").isEqualTo(504);
        String processId = ledger.processByIdempotencyKey(key).orElseThrow().processId();

        ResponseEntity<Map<String, Object>> replay = Flux.interval(Duration.ofMillis(100)).onBackpressureDrop()
                .concatMap(t -> creating(key, body))
                .filter(answer -> answer.getStatusCode().value() != 409)
                .next().block(Duration.ofSeconds(60));

        assertThat(replay.getStatusCode().value()).isEqualTo(200);
        assertThat(replay.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(replay.getHeaders().getFirst("Idempotency-Reconciled")).isEqualTo("true");
        assertThat(replay.getBody()).containsEntry("processId", processId);
        assertThat(ledger.writeRequests()).as("the write reached the backend once").isEqualTo(1);
    }

    /** The lookup the gateway makes, sent through the pass-through process route: without the token it tells nothing. */
    @Test
    void theBackendsLookupIsRefusedWithoutTheTokenTheRouteSends() {
        String key = UUID.randomUUID().toString();
        WebClient gateway = WebClient.create("http://127.0.0.1:" + port);

        assertThat(lookUp(gateway.get().uri("/processes/by-idempotency-key/{key}", key))).isEqualTo(401);
        assertThat(lookUp(gateway.get().uri("/processes/by-idempotency-key/{key}", key)
                .header("Authorization", "Bearer onboarding-dev-lookup-token"))).as("the development default")
                .isEqualTo(401);
        assertThat(lookUp(gateway.get().uri("/processes/by-idempotency-key/{key}", key)
                .header("Authorization", "Bearer " + LOOKUP_TOKEN))).as("never received").isEqualTo(404);
    }

    static int lookUp(WebClient.RequestHeadersSpec<?> request) {
        return request.exchangeToMono(response -> response.releaseBody().thenReturn(response.statusCode().value()))
                .block(Duration.ofSeconds(30));
    }

    ResponseEntity<Map<String, Object>> create(String key, String body) {
        return creating(key, body).block(Duration.ofSeconds(30));
    }

    Mono<ResponseEntity<Map<String, Object>>> creating(String key, String body) {
        return WebClient.create("http://127.0.0.1:" + port).post().uri("/merchants").header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(body)
                .exchangeToMono(response -> response.toEntity(JSON));
    }
}
