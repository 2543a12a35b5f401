package dev.retrysafe.gateway.support;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.redis.RedisWakeUps;
import dev.retrysafe.gateway.idempotency.store.redis.WakeUpChannel;
import dev.retrysafe.gateway.support.Gateways;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * A real gateway on a Redis reached through the given {@code spring.data.redis.*} settings, in front of a WireMock
 * upstream, and the two outcomes the Redis connection tests expect of it.
 */
public final class RedisBackedGateway implements AutoCloseable {
    public static final String PATH = "/merchants/redis";
    public static final String BODY = "{\"processId\":\"p-redis\"}";

    private static final Duration WAIT = Duration.ofSeconds(10);
    /** A wake-up as the settling scripts publish it. */
    private static final RedisScript<Long> PUBLISH = RedisScript.of(
            "return redis.call(ARGV[3] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[1], ARGV[2])", Long.class);

    private final WireMockServer upstream;
    private final ConfigurableApplicationContext gateway;

    public RedisBackedGateway(WireMockServer upstream, Map<String, String> redisSettings) {
        this.upstream = upstream;
        upstream.resetAll();
        upstream.stubFor(post(urlEqualTo(PATH)).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody(BODY)));
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), redisSettings);
    }

    /** Answers within five seconds: a Redis that refuses the gateway must not make requests hang. */
    public WebTestClient client() {
        return WebTestClient.bindToServer()
                .baseUrl("http://127.0.0.1:" + gateway.getEnvironment().getRequiredProperty("local.server.port"))
                .responseTimeout(Duration.ofSeconds(5)).build();
    }

    /** Guarded requests work: a first write is forwarded once, its retry replayed. */
    public void assertWritesAndReplays() {
        String key = UUID.randomUUID().toString();
        send(key).expectStatus().isEqualTo(202).expectBody(String.class).isEqualTo(BODY);
        send(key).expectStatus().isOk().expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo(BODY);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo(PATH)));
    }

    /**
     * A wake-up published in Redis, as another instance's settle publishes it, reaches a waiter of this gateway: its
     * own pub/sub connections (the classic channel's, and the shard channels' Lettuce connection) connect with the
     * same settings as Spring's.
     */
    public void assertWakeUpsArrive() {
        RedisWakeUps wakeUps = gateway.getBean(RedisWakeUps.class);
        String scopeHash = UUID.randomUUID().toString();
        try (SettleWaiter waiter = wakeUps.register(scopeHash)) {
            waiter.listening().block(WAIT);
            WakeUpChannel channel = wakeUps.channel().block(WAIT);
            new ReactiveStringRedisTemplate(gateway.getBean(ReactiveRedisConnectionFactory.class))
                    .execute(PUBLISH, List.of(), List.of(channel.channelOf(scopeHash), scopeHash,
                            channel == WakeUpChannel.SHARDED ? "1" : "0"))
                    .blockLast(WAIT);
            waiter.settled().block(WAIT);
        }
    }

    /** Guarded requests are refused at once with 503 in the envelope, and nothing reaches the upstream. */
    public void assertRefused() {
        for (int attempt = 0; attempt < 2; attempt++) {
            send(UUID.randomUUID().toString())
                    .expectStatus().isEqualTo(503)
                    .expectHeader().exists("Retry-After")
                    .expectHeader().contentType(MediaType.APPLICATION_JSON)
                    .expectBody()
                    .jsonPath("$.status.status").isEqualTo("FAILED")
                    .jsonPath("$.status.reason").isEqualTo(503);
        }
        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
    }

    private WebTestClient.ResponseSpec send(String key) {
        return client().post().uri(PATH).header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"legalName\":\"ACME\"}").exchange();
    }

    @Override
    public void close() {
        gateway.close();
    }
}
