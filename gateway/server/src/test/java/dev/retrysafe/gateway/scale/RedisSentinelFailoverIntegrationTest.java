package dev.retrysafe.gateway.scale;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.WakeUpChannel;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisSentinel;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.RespProbe;
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
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Sentinel failovers, configured with the standard {@code spring.data.redis.sentinel.*}. First a manual one:
 * {@code SENTINEL FAILOVER} promotes the replica at once and leaves the old master a writable master until Sentinel
 * converts it, 8-18 s later; a gateway that stayed on it would write records that vanish at the conversion. The
 * gateway follows Sentinel's {@code +switch-master}: its records, its wake-up subscription and every one of its
 * connections are on the new master while the old one still says it is a master. Then the master is SIGKILLed
 * while requests run: clients get 503 with Retry-After (never forwarded unprotected) until Sentinel promotes the
 * replica, then 202 again without a gateway restart, and results written before the kill replay from the new
 * master. Needs {@code redis-server} and {@code redis-cli} on the PATH; skipped, saying so, without them.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisSentinelFailoverIntegrationTest {
    /** Generous for a loaded machine, and shorter than Sentinel takes to convert the old master (8 s at least). */
    private static final Duration FOLLOWED_WITHIN = Duration.ofSeconds(10);
    private static final String CLIENT_NAME = "gateway-under-test";

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
                "spring.data.redis.client-name", CLIENT_NAME,
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

    static String recordOf(String key) {
        return RedisKeyspace.recordKey(new IdempotencyScope("", "onboarding", new IdempotencyKey(key)));
    }

    @Test
    @Order(1)
    void afterAManualFailoverTheGatewayWritesOnTheNewMasterBeforeTheOldOneIsDemoted() throws Exception {
        assertThat(send(UUID.randomUUID().toString())).isEqualTo(202);

        int old = sentinel.startFailover();
        long deadline = System.nanoTime() + FOLLOWED_WITHIN.toNanos();
        int promoted = sentinel.awaitMasterOtherThan(old);

        String onNewMaster = null;
        while (onNewMaster == null && System.nanoTime() < deadline) {
            String key = UUID.randomUUID().toString();
            if (send(key) == 202 && LocalRedisCluster.cli(promoted, "exists", recordOf(key)).equals("1")) {
                onNewMaster = key;
            }
        }
        assertThat(onNewMaster).as("a guarded request's record on the new master within %s of the failover",
                FOLLOWED_WITHIN).isNotNull();
        while (LocalRedisSentinel.connectionsNamed(old, CLIENT_NAME) > 0 && System.nanoTime() < deadline) {
            RespProbe.pollAgain();
        }
        assertThat(LocalRedisSentinel.connectionsNamed(old, CLIENT_NAME))
                .as("the gateway's connections left on the old master").isZero();
        while (!LocalRedisCluster.cli(promoted, "pubsub", "numsub", RedisKeyspace.CLASSIC_CHANNEL).endsWith("\n1")
                && System.nanoTime() < deadline) {
            RespProbe.pollAgain();
        }
        assertThat(LocalRedisCluster.cli(promoted, "pubsub", "numsub", RedisKeyspace.CLASSIC_CHANNEL))
                .as("the wake-up subscription on the new master").endsWith("\n1");
        assertThat(LocalRedisSentinel.isMaster(old))
                .as("all of it while the old master still took writes (before Sentinel converted it)").isTrue();

        sentinel.awaitOldMasterDemoted(old);
        assertThat(LocalRedisCluster.cli(promoted, "exists", recordOf(onNewMaster)))
                .as("the record survives the old master's conversion").isEqualTo("1");
        assertThat(send(onNewMaster)).as("and replays").isEqualTo(200);
        sentinel.awaitReplicasReady(); // the next test's failover needs a replica Sentinel trusts
    }
    @Test
    @Order(2)
    void aMasterKilledUnderLoadShowsAs503sUntilTheReplicaIsPromoted() throws Exception {
        String before = UUID.randomUUID().toString();
        assertThat(send(before)).isEqualTo(202);
        // Let the replica receive this very record before the master dies (replication is asynchronous; the first
        // test's records are on it already, so any record would not do).
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!Long.valueOf(1).equals(RespProbe.call(sentinel.currentReplicaPort(), "EXISTS", recordOf(before)))
                && System.nanoTime() < deadline) {
            RespProbe.pollAgain();
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
