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
import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.LuaScripts;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LateRedisReplies;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
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
 * Redis runs a store call but its answer reaches the gateway after {@code store-timeout}: the gateway retries the
 * call, and the retry finds the first attempt's write. That is a confirmed retry ({@code store-retry-confirmed}),
 * never {@code store-not-owner}, the incident of a record settled by someone else. The lateness is real: Redis's
 * replies are held back on the wire ({@link LateRedisReplies}) until the retry has reached Redis.
 */
class LateStoreAnswerIntegrationTest {
    static EmbeddedRedisServer redis;
    static LateRedisReplies wire;
    static WireMockServer upstream;
    static ConfigurableApplicationContext gateway;
    static LettuceConnectionFactory direct;
    static ReactiveStringRedisTemplate records;
    static IdempotencyEvents events;

    @BeforeAll
    static void start() throws IOException {
        redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        wire = new LateRedisReplies(redis.port());
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", Integer.toString(wire.port()),
                "idempotency.store-timeout", "500ms",
                "spring.cloud.gateway.server.webflux.routes[0].metadata.response-timeout", "3000"));
        events = gateway.getBean(IdempotencyEvents.class);
        // The test's own look at Redis goes around the late wire.
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
    void aCompletionAnsweredLateIsConfirmedByItsRetryNotCountedAsStoreNotOwner() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/late-complete")).willReturn(aResponse().withStatus(202)
                .withBody("created")));
        LateAnswer late = LateAnswer.to("idempotency_complete.lua", key);

        assertThat(send("/merchants/late-complete", key).getStatusCode().value()).isEqualTo(202);
        late.confirmedByTheRetry("COMPLETED");

        assertThat(field(key, "attempts")).isEqualTo("1");
        ResponseEntity<String> retry = send("/merchants/late-complete", key);
        assertThat(retry.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(retry.getBody()).isEqualTo("created");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/late-complete")));
    }

    @Test
    void aReleaseAnsweredLateIsRetriedAndConfirmed() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/late-release")).willReturn(aResponse().withStatus(503)));
        LateAnswer late = LateAnswer.to("idempotency_release.lua", key);

        assertThat(send("/merchants/late-release", key).getStatusCode().value()).isEqualTo(503);
        late.confirmedByTheRetry("(none)");

        // Released indeed: the client's retry is forwarded.
        assertThat(send("/merchants/late-release", key).getStatusCode().value()).isEqualTo(503);
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo("/merchants/late-release")));
    }

    @Test
    void anUncertainMarkAnsweredLateIsConfirmedByItsRetryAndCountedOnce() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/late-uncertain")).willReturn(aResponse().withStatus(202)
                .withFixedDelay(6000)));
        double uncertain = events.count("uncertain");
        LateAnswer late = LateAnswer.to("idempotency_uncertain.lua", key);

        assertThat(send("/merchants/late-uncertain", key).getStatusCode().value()).isEqualTo(504);
        late.confirmedByTheRetry("UNCERTAIN");

        assertThat(events.count("uncertain")).as("one uncertain outcome, counted once").isEqualTo(uncertain + 1);
    }

    /** The script's next call for the key runs in Redis, but its answer arrives only after the call's retry. */
    record LateAnswer(String key, double notOwnerBefore, double confirmedBefore) {
        static LateAnswer to(String script, String key) {
            // Loaded first, so that the gateway's call is one EVALSHA (no NOSCRIPT round trip) carrying the SHA.
            String text = LuaScripts.source(script);
            String sha = records.execute(c -> c.scriptingCommands()
                    .scriptLoad(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)))).next().block();
            LateAnswer late = new LateAnswer(key, events.count("store-not-owner"),
                    events.count("store-retry-confirmed"));
            wire.holdRepliesAfter(sha, scope(key).hash());
            return late;
        }

        /** The call reached Redis twice, the retry found the first write: confirmed, not an incident. */
        void confirmedByTheRetry(String recordState) {
            // Polled (bounded): the store call may end after the client has its answer.
            Flux.interval(Duration.ofMillis(20)).onBackpressureDrop().map(t -> events.count("store-retry-confirmed"))
                    .filter(n -> n > confirmedBefore).next().timeout(Duration.ofSeconds(15), Mono.empty()).block();
            assertThat(events.count("store-retry-confirmed")).isEqualTo(confirmedBefore + 1);
            assertThat(wire.matches()).as("the call reached Redis, then its retry").isEqualTo(2);
            assertThat(field(key, "state")).isEqualTo(recordState);
            assertThat(events.count("store-not-owner")).isEqualTo(notOwnerBefore);
        }
    }

    static IdempotencyScope scope(String key) {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(key));
    }

    static ResponseEntity<String> send(String path, String key) {
        return Gateways.client(gateway).post().uri(path).header("Idempotency-Key", key).bodyValue("x")
                .exchangeToMono(r -> r.toEntity(String.class)).block(Duration.ofSeconds(20));
    }

    static String field(String key, String field) {
        return records.<String, String>opsForHash().get(RedisKeyspace.recordKey(scope(key)), field)
                .defaultIfEmpty("(none)").block(Duration.ofSeconds(5));
    }
}
