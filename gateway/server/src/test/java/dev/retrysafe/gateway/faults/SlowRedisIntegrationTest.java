package dev.retrysafe.gateway.faults;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.TcpHop;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Redis slower than store-timeout, for real: its replies held on the wire ({@link TcpHop}), or a Redis that accepts
 * connections and never answers. A client gets 503 within a bound derived from store-timeout, nothing is sent
 * upstream, and once Redis answers again the client's retry with the same key and body is forwarded: a reservation
 * the gateway gave up on is released, never left with an owner nobody holds.
 */
class SlowRedisIntegrationTest {
    static final Duration STORE_TIMEOUT = Duration.ofMillis(300);
    static EmbeddedRedisServer redis;
    static TcpHop wire;
    static WireMockServer upstream;
    static ConfigurableApplicationContext gateway;
    static LettuceConnectionFactory direct;
    static ReactiveStringRedisTemplate records;

    @BeforeAll
    static void start() throws IOException {
        redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        wire = new TcpHop(redis.port(), () -> (bytes, length) -> { });
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", Integer.toString(wire.port()),
                "idempotency.store-timeout", STORE_TIMEOUT.toMillis() + "ms",
                "idempotency.in-flight-lease", "6s"));
        // The test's own look at Redis goes around the slow wire.
        direct = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redis.port()));
        direct.afterPropertiesSet();
        direct.start();
        records = new ReactiveStringRedisTemplate(direct);
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(gateway, upstream == null ? null : upstream::stop, wire,
                direct == null ? null : direct::destroy, redis == null ? null : redis::stop);
    }

    @Test
    void aReservationAnsweredTooLateIsReleasedAndTheRetryIsForwarded() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/slow-redis")).willReturn(aResponse().withStatus(201)
                .withBody("created")));

        // A warm gateway: connection open, Redis's version known (so the reserve itself is what is late).
        assertThat(send(gateway, "/merchants/slow-redis", UUID.randomUUID().toString()).getStatusCode().value())
                .isEqualTo(201);
        // Redis runs the reserve; its reply comes 900 ms later, three store-timeouts too late.
        wire.holdFromTarget(Duration.ofMillis(900));
        assertThat(send(gateway, "/merchants/slow-redis", key).getStatusCode().value()).isEqualTo(503);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/slow-redis")));

        // Replies flow again: the reservation nobody holds is released in the background.
        Flux.interval(Duration.ofMillis(50)).onBackpressureDrop()
                .filterWhen(t -> records.hasKey(RedisKeyspace.recordKey(scope(key))).map(exists -> !exists))
                .next().timeout(Duration.ofSeconds(20), Mono.empty()).block();
        ResponseEntity<String> retry = send(gateway, "/merchants/slow-redis", key);
        assertThat(retry.getStatusCode().value()).as("the retry is forwarded, not refused").isEqualTo(201);
        assertThat(retry.getBody()).isEqualTo("created");
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo("/merchants/slow-redis")));
    }

    @Test
    void aRedisThatAcceptsAndNeverAnswersAtStartupGets503WithinTheStoreTimeout() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            ConfigurableApplicationContext hung = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                    "spring.data.redis.host", "127.0.0.1",
                    "spring.data.redis.port", Integer.toString(silent.getLocalPort()),
                    "idempotency.store-timeout", STORE_TIMEOUT.toMillis() + "ms",
                    // Lettuce's timeouts shortened (from 10 s and 60 s) so that this gateway starts and stops
                    // in reasonable time; still far beyond the bound asserted.
                    "spring.data.redis.timeout", "15s",
                    "spring.data.redis.connect-timeout", "15s"));
            try {
                long sent = System.nanoTime();
                ResponseEntity<String> refused = send(hung, "/merchants/hung-redis", UUID.randomUUID().toString());
                Duration took = Duration.ofNanos(System.nanoTime() - sent);

                assertThat(refused.getStatusCode().value()).isEqualTo(503);
                // Generous: Lettuce's own timeouts, which held the request before, are 10 s and 60 s.
                assertThat(took).isLessThan(STORE_TIMEOUT.plusSeconds(5));
                upstream.verify(exactly(0), postRequestedFor(urlEqualTo("/merchants/hung-redis")));
            } finally {
                hung.close();
            }
        }
    }

    static IdempotencyScope scope(String key) {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(key));
    }

    static ResponseEntity<String> send(ConfigurableApplicationContext to, String path, String key) {
        return Gateways.client(to).post().uri(path).header("Idempotency-Key", key).bodyValue("x")
                .exchangeToMono(r -> r.toEntity(String.class)).block(Duration.ofSeconds(90));
    }
}
