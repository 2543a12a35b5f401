package dev.retrysafe.gateway.faults;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.filter.PendingSettles;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.RespProbe;
import dev.retrysafe.gateway.support.WritePausedRedis;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Mono;

/**
 * A stored result's answer does not wait for its store call (issue 34: on a kept-alive connection that Redis round
 * trip was in every next request's latency), and a shutdown waits for the call. Redis's writes are paused
 * ({@code CLIENT PAUSE WRITE}) once the request is at the upstream, so the record's completion is held for as long
 * as the test says: the client must have its whole answer while the record is still IN_FLIGHT, long before the
 * settle deadline (3 x a store-timeout of 10 s) that used to bound the wait.
 */
class AnswerBeforeStoredIntegrationTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    EmbeddedRedisServer redis;
    WireMockServer upstream;
    ConfigurableApplicationContext gateway;

    @BeforeEach
    void start() throws Exception {
        redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", Integer.toString(redis.port()),
                "idempotency.store-timeout", "10s"));
    }

    @AfterEach
    void stop() throws Exception {
        Gateways.closeAll(gateway, upstream == null ? null : upstream::stop, redis == null ? null : redis::stop);
    }

    @Test
    void theClientHasItsResultWhileTheRecordIsStoredAndShutdownWaitsForTheStoreCall() throws Exception {
        String key = UUID.randomUUID().toString();
        String record = RedisKeyspace.recordKey(new IdempotencyScope("", "onboarding", new IdempotencyKey(key)));
        // Long enough for the pause to begin while the request is at the upstream.
        upstream.stubFor(post(urlEqualTo("/merchants/held")).willReturn(aResponse().withStatus(202)
                .withBody("created").withFixedDelay(3000)));

        CompletableFuture<ResponseEntity<String>> answer = send(key).toFuture();
        awaitTrue(() -> "IN_FLIGHT".equals(RespProbe.text(redis.port(), "HGET", record, "state")),
                "the reservation");
        PendingSettles settles = gateway.getBean(PendingSettles.class);
        try (WritePausedRedis paused = new WritePausedRedis(redis.port(), Duration.ofSeconds(60))) {
            ResponseEntity<String> first = answer.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertThat(first.getStatusCode().value()).isEqualTo(202);
            assertThat(first.getBody()).isEqualTo("created");
            assertThat(paused.hget(record, "state")).as("the answer came before its record was stored")
                    .isEqualTo("IN_FLIGHT");
            assertThat(settles.underWay()).as("the completion, held by the pause").isEqualTo(1);

            CompletableFuture<Void> closed = CompletableFuture.runAsync(gateway::close);
            awaitTrue(settles::draining, "shutdown waiting for the completion");
            assertThat(closed).as("shutdown waits while the completion is held").isNotDone();
            paused.close();
            closed.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }
        assertThat(RespProbe.text(redis.port(), "HGET", record, "state"))
                .as("stored before the store's connections closed").isEqualTo("COMPLETED");
        assertThat(RespProbe.text(redis.port(), "HGET", record, "status")).isEqualTo("202");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/held")));
    }

    private Mono<ResponseEntity<String>> send(String key) {
        return Gateways.client(gateway).post().uri("/merchants/held").header("Idempotency-Key", key).bodyValue("x")
                .exchangeToMono(r -> r.toEntity(String.class));
    }

    private static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("%s within %s", what, WAIT).isLessThan(deadline);
            RespProbe.pollAgain();
        }
    }
}
