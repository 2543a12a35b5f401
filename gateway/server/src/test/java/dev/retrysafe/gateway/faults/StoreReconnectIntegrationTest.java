package dev.retrysafe.gateway.faults;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.RedisFaultProxy;
import dev.retrysafe.gateway.support.RestartableRedis;
import dev.retrysafe.gateway.support.RespProbe;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;

/**
 * A reserve that reached Redis but whose answer the gateway never used: Lettuce delivers commands at least once (its
 * default), so a reserve whose reply was lost in a reset is sent again on the new connection and finds the record
 * it made itself; a reserve answered after store-timeout has made a record nobody holds. Either way the client's
 * retry must be forwarded once, never refused as "still being processed" or "outcome unknown" for a request the
 * upstream never received. The faults are held by the {@link RedisFaultProxy}, not raced for.
 */
class StoreReconnectIntegrationTest {
    private static final String PATH = "/merchants/reconnect";

    RestartableRedis redis;
    RedisFaultProxy proxy;
    WireMockServer upstream;
    ConfigurableApplicationContext gateway;

    @BeforeEach
    void start() throws IOException {
        assumeTrue(LocalRedisCluster.onPath("redis-server"), "needs redis-server on the PATH");
        redis = RestartableRedis.persistent();
        proxy = new RedisFaultProxy(redis.port());
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        upstream.stubFor(post(urlEqualTo(PATH)).willReturn(aResponse().withStatus(201).withBody("created")));
    }

    @AfterEach
    void stop() throws Exception {
        Gateways.closeAll(gateway, upstream == null ? null : upstream::stop, proxy, redis);
    }

    private void startGateway(Duration storeTimeout) {
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", Integer.toString(proxy.port()),
                "idempotency.store-timeout", storeTimeout.toMillis() + "ms",
                "idempotency.in-flight-lease", "3s",
                "idempotency.in-flight-wait", "1s",
                "spring.cloud.gateway.server.webflux.routes[0].metadata.response-timeout", "3000"));
        // The first store call opens the connection and checks Redis's version: done before the fault.
        assertThat(send(UUID.randomUUID().toString()).getStatusCode().value()).isEqualTo(201);
    }

    @Test
    void aReserveWhoseReplyALostConnectionTookIsForwardedOrReleasedNeverLeftHeld() throws Exception {
        startGateway(Duration.ofSeconds(5));
        String key = UUID.randomUUID().toString();
        long reservesBefore = scriptCalls();
        proxy.delayReplies(Duration.ofMinutes(1), Duration.ofMinutes(1));
        CompletableFuture<ResponseEntity<String>> first = CompletableFuture.supplyAsync(() -> send(key));
        awaitRecord(key);
        // The reserve ran, its reply is held: the connection dies under it, well within store-timeout.
        proxy.resetAll(true);
        proxy.heal();

        ResponseEntity<String> answer = first.get();
        long scripts = scriptCalls() - reservesBefore;
        // Forwarded (a reserve re-sent on the new connection found its own record: RESERVED), or refused with the
        // reservation released in the background: then the retry is forwarded.
        assertThat(answer.getStatusCode().value()).as("%s (Redis ran %d scripts)", answer, scripts).isIn(201, 503);
        if (answer.getStatusCode().value() == 503) {
            awaitNotHeld(key, Duration.ofSeconds(5));
            ResponseEntity<String> retry = send(key);
            assertThat(retry.getStatusCode().value()).as("%s (Redis ran %d scripts for the first)", retry, scripts)
                    .isEqualTo(201);
        }
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo(PATH)).withHeader("Idempotency-Key",
                equalTo(key)));
    }

    @Test
    void aReserveAnsweredAfterStoreTimeoutLeavesNoRecordThatRefusesTheRetry() throws Exception {
        startGateway(Duration.ofMillis(300));
        String key = UUID.randomUUID().toString();
        proxy.delayReplies(Duration.ofMillis(900), Duration.ofMinutes(1));
        ResponseEntity<String> refused = send(key);
        assertThat(refused.getStatusCode().value()).as(refused.toString()).isEqualTo(503);
        awaitRecord(key); // the reserve ran all the same
        proxy.heal();
        awaitNotHeld(key, Duration.ofSeconds(5));

        ResponseEntity<String> retry = send(key);
        assertThat(retry.getStatusCode().value()).as(retry.toString()).isEqualTo(201);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo(PATH)).withHeader("Idempotency-Key",
                equalTo(key)));
    }

    private ResponseEntity<String> send(String key) {
        return Gateways.client(gateway).post().uri(PATH).header("Idempotency-Key", key).bodyValue("x")
                .exchangeToMono(r -> r.toEntity(String.class)).block(Duration.ofSeconds(30));
    }

    /** Read around the proxy: the record the reserve made in Redis. */
    private void awaitRecord(String key) throws IOException, InterruptedException {
        String record = RedisKeyspace.recordKey(new IdempotencyScope("", "onboarding", new IdempotencyKey(key)));
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!Long.valueOf(1).equals(RespProbe.call(redis.port(), "EXISTS", record))) {
            assertThat(System.nanoTime()).as("the reserve never reached Redis").isLessThan(deadline);
            RespProbe.pollAgain();
        }
    }

    /**
     * Bounded: until the record is released (gone, or no longer IN_FLIGHT), or the lease and some slack passed, so
     * that the retry meets whatever the gateway left.
     */
    private void awaitNotHeld(String key, Duration atMost) throws IOException, InterruptedException {
        String record = RedisKeyspace.recordKey(new IdempotencyScope("", "onboarding", new IdempotencyKey(key)));
        long deadline = System.nanoTime() + atMost.toNanos();
        while (System.nanoTime() < deadline
                && RespProbe.text(redis.port(), "HGET", record, "state").equals("IN_FLIGHT")) {
            RespProbe.pollAgain();
        }
    }

    /** Scripts Redis ran (every store call is one), from its own counters. */
    private long scriptCalls() throws IOException, InterruptedException {
        return LocalRedisCluster.commandStat(redis.port(), "evalsha", "calls")
                + LocalRedisCluster.commandStat(redis.port(), "eval", "calls");
    }
}
