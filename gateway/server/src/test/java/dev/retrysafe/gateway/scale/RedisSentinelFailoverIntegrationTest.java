package dev.retrysafe.gateway.scale;

import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisSentinel;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathMatching;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.tomakehurst.wiremock.WireMockServer;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Sentinel failover, configured with the standard {@code spring.data.redis.sentinel.*}: the master is SIGKILLed
 * while requests run. Clients get 503 with Retry-After (never forwarded unprotected) until Sentinel promotes the
 * replica, then 202 again without a gateway restart, and results written before the kill replay from the new
 * master. Needs {@code redis-server} and {@code redis-cli} on the PATH; skipped, saying so, without them.
 */
class RedisSentinelFailoverIntegrationTest {
    static LocalRedisSentinel sentinel;
    static WireMockServer upstream;
    static ConfigurableApplicationContext gateway;

    @BeforeAll
    static void start() throws Exception {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Sentinel setup can be started");
        sentinel = new LocalRedisSentinel();
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        upstream.stubFor(post(urlPathMatching("/merchants/.*")).willReturn(aResponse().withStatus(202).withBody("ok")));
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "spring.data.redis.sentinel.master", LocalRedisSentinel.MASTER_NAME,
                "spring.data.redis.sentinel.nodes", sentinel.sentinelNodes(),
                "spring.data.redis.timeout", "1s"));
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(gateway, upstream == null ? null : upstream::stop, sentinel);
    }

    static int send(String key) {
        return Gateways.client(gateway).post().uri("/merchants/" + key).header("Idempotency-Key", key).bodyValue("x")
                .exchangeToMono(r -> r.releaseBody().thenReturn(r.statusCode().value()))
                .onErrorReturn(-1).block(Duration.ofSeconds(30));
    }

    @Test
    void aMasterKilledUnderLoadShowsAs503sUntilTheReplicaIsPromoted() throws Exception {
        String before = UUID.randomUUID().toString();
        assertThat(send(before)).isEqualTo(202);
        // Let the replica receive the stored result before the master dies (replication is asynchronous).
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!LocalRedisCluster.cli(sentinel.replicaPort(), "keys", "idempotency:*").contains("idempotency:")
                && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }

        sentinel.killMaster();
        FailoverProbe probe = FailoverProbe.run(() -> UUID.randomUUID().toString(), RedisSentinelFailoverIntegrationTest::send,
                10, Duration.ofSeconds(60));
        assertThat(probe.consecutiveOk).as("healed without a gateway restart: %s", probe.statuses).isEqualTo(10);
        assertThat(probe.statuses.keySet()).as("only 202, or 503 while failing over").isSubsetOf(202, 503);

        assertThat(send(before)).as("a result replicated before the kill replays from the new master").isEqualTo(200);
        for (String key : probe.accepted) {
            assertThat(upstream.countRequestsMatching(postRequestedFor(urlPathMatching("/merchants/" + key)).build())
                    .getCount()).isEqualTo(1);
        }
    }
}
