package dev.retrysafe.gateway.scale;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathMatching;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.tomakehurst.wiremock.WireMockServer;
import io.lettuce.core.cluster.SlotHash;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisStoreBuilder;
import dev.retrysafe.gateway.idempotency.store.redis.RedisWakeUps;
import dev.retrysafe.gateway.idempotency.store.redis.WakeUpChannel;
import dev.retrysafe.gateway.idempotency.store.redis.StoreConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.publisher.Mono;

/**
 * A master of a three-master, three-replica Redis Cluster is killed with SIGKILL while requests run. What clients
 * see: requests whose record lives on the dead master get 503 with Retry-After (fail closed, never forwarded
 * unprotected) until its replica is promoted; then they succeed again, without a gateway restart. Requests are
 * never answered with another 5xx, and no key reaches the upstream twice. Wake-ups in the dead master's slots
 * follow too: the gateway's shard subscription there is taken again at the promoted replica.
 */
class RedisClusterFailoverIntegrationTest {
    static LocalRedisCluster cluster;
    static WireMockServer upstream;
    static ConfigurableApplicationContext gateway;

    @BeforeAll
    static void start() throws Exception {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Redis Cluster can be started");
        cluster = new LocalRedisCluster(3, 1);
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        upstream.stubFor(post(urlPathMatching("/merchants/.*")).willReturn(aResponse().withStatus(202).withBody("ok")));
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "spring.data.redis.cluster.nodes", cluster.nodes(),
                "spring.data.redis.lettuce.cluster.refresh.adaptive", "true",
                "spring.data.redis.lettuce.cluster.refresh.period", "1s",
                "spring.data.redis.timeout", "1s"));
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(gateway, upstream == null ? null : upstream::stop, cluster);
    }

    static int send(String key) {
        return Gateways.client(gateway).post().uri("/merchants/" + key).header("Idempotency-Key", key).bodyValue("x")
                .exchangeToMono(r -> r.releaseBody().thenReturn(r.statusCode().value()))
                .onErrorReturn(-1).block(Duration.ofSeconds(30));
    }

    static String recordKey(String key) {
        return RedisKeyspace.recordKey(scope(key));
    }

    @Test
    void killingAMasterShowsAsShort503sForItsKeysThenHeals() throws Exception {
        // Keys whose records live on the master about to die.
        String first = UUID.randomUUID().toString();
        int victim = cluster.ownerOf(recordKey(first));
        int survivor = cluster.ports().stream().filter(p -> p != victim).findFirst().orElseThrow();
        assertThat(send(first)).isEqualTo(202);
        List<int[]> victimSlots = slotsOf(victim);
        assertThat(victimSlots).isNotEmpty();
        // A waiter holds the gateway's subscription to a slot of the victim across the failover.
        IdempotencyScope waitedOn = scope(keyOnSlotsOf(victimSlots));
        RedisWakeUps wakeUps = gateway.getBean(RedisWakeUps.class);
        SettleWaiter heldAcrossTheFailover = wakeUps.register(waitedOn.hash());
        heldAcrossTheFailover.listening().block(Duration.ofSeconds(10));

        cluster.kill(victim);
        FailoverProbe probe = FailoverProbe.run(() -> keyOnSlotsOf(victimSlots), RedisClusterFailoverIntegrationTest::send, 10,
                Duration.ofSeconds(60));
        assertThat(probe.consecutiveOk).as("healed without a gateway restart: %s", probe.statuses).isEqualTo(10);
        assertThat(probe.statuses.keySet()).as("only 202, or 503 while failing over").isSubsetOf(202, 503);
        cluster.awaitHealthy(survivor);

        // Every accepted key reached the upstream once; their replays come from the promoted replica.
        for (String key : probe.accepted) {
            assertThat(upstream.countRequestsMatching(postRequestedFor(urlPathMatching("/merchants/" + key)).build())
                    .getCount()).isEqualTo(1);
            assertThat(send(key)).isEqualTo(200);
        }

        // A new waiter in that slot finds its subscription's master gone and subscribes at the promoted replica:
        // another instance's settle there wakes it.
        IdempotencyScope inTheSameSlot = scopeInTheSlotOf(waitedOn);
        LettuceConnectionFactory otherInstance = new LettuceConnectionFactory(
                new RedisClusterConfiguration(List.of(cluster.nodes().split(","))));
        try (SettleWaiter waiter = wakeUps.register(inTheSameSlot.hash())) {
            waiter.listening().block(Duration.ofSeconds(10));
            otherInstance.afterPropertiesSet();
            otherInstance.start();
            RedisIdempotencyStore store = RedisStoreBuilder.plain(StoreConnection.open(otherInstance),
                    RedisWakeUps.on(otherInstance, new SettleSignals(), WakeUpChannel.SHARDED));
            OwnerToken owner = OwnerToken.random();
            store.reserve(request(inTheSameSlot, owner, false)).block(Duration.ofSeconds(10));
            store.reserve(request(inTheSameSlot, OwnerToken.random(), true)).block(Duration.ofSeconds(10));
            Mono<Void> woken = waiter.settled().cache();
            woken.subscribe();

            store.release(inTheSameSlot, owner).block(Duration.ofSeconds(10));
            woken.block(Duration.ofSeconds(10));
        } finally {
            heldAcrossTheFailover.close();
            otherInstance.destroy();
        }
    }

    static IdempotencyScope scope(String key) {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(key));
    }

    /** Another record in the same Cluster slot. */
    private static IdempotencyScope scopeInTheSlotOf(IdempotencyScope scope) {
        int slot = SlotHash.getSlot(RedisKeyspace.recordKey(scope));
        while (true) {
            IdempotencyScope candidate = scope(UUID.randomUUID().toString());
            if (SlotHash.getSlot(RedisKeyspace.recordKey(candidate)) == slot) {
                return candidate;
            }
        }
    }

    private static ReservationRequest request(IdempotencyScope scope, OwnerToken owner, boolean willWait) {
        return new ReservationRequest(scope, Fingerprints.underNoRules(new Fingerprint("a".repeat(64))), owner, Duration.ofSeconds(30),
                Duration.ofMinutes(1), "http://upstream", willWait, false, "POST", "/merchants/failover",
                Optional.empty());
    }

    /** A fresh key whose record hashes to a slot of the given master (slot ranges read before it died). */
    private static String keyOnSlotsOf(List<int[]> slots) {
        while (true) {
            String key = UUID.randomUUID().toString();
            int slot = SlotHash.getSlot(recordKey(key));
            for (int[] range : slots) {
                if (slot >= range[0] && slot <= range[1]) {
                    return key;
                }
            }
        }
    }

    /** The slot ranges the master on {@code port} serves, from its own CLUSTER NODES line. */
    private static List<int[]> slotsOf(int port) throws Exception {
        List<int[]> ranges = new ArrayList<>();
        for (String line : LocalRedisCluster.cli(port, "cluster", "nodes").split("\n")) {
            if (line.contains("myself")) {
                String[] fields = line.trim().split(" ");
                for (int i = 8; i < fields.length; i++) {
                    if (!fields[i].startsWith("[")) {
                        String[] bounds = fields[i].split("-");
                        int from = Integer.parseInt(bounds[0]);
                        ranges.add(new int[] {from, bounds.length > 1 ? Integer.parseInt(bounds[1]) : from});
                    }
                }
            }
        }
        return ranges;
    }
}
