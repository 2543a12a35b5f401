package dev.retrysafe.gateway.scale;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathMatching;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.operator.RecordFilter;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The gateway on a real three-master Redis Cluster configured with {@code spring.data.redis.cluster.nodes}: every
 * record lives in one hash slot (its key has a hash tag), records spread over all masters, and the in-flight
 * wake-up works in cluster mode. Needs {@code redis-server} and {@code redis-cli} on the PATH (.ci/run installs
 * them); skipped, saying so, where they are missing.
 */
class RedisClusterIntegrationTest {
    static LocalRedisCluster cluster;
    static WireMockServer upstream;
    static ConfigurableApplicationContext gateway;

    @BeforeAll
    static void start() throws Exception {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Redis Cluster can be started");
        cluster = new LocalRedisCluster(3);
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(),
                Map.of("spring.data.redis.cluster.nodes", cluster.nodes()));
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(gateway, upstream == null ? null : upstream::stop, cluster);
    }

    static Mono<ResponseEntity<String>> send(String path, String key, String body) {
        return Gateways.client(gateway).post().uri(path).header("Idempotency-Key", key).bodyValue(body)
                .exchangeToMono(r -> r.toEntity(String.class));
    }

    @Test
    void firstWriteReplayAndMismatchWorkForRecordsOnEveryMaster() {
        upstream.stubFor(post(urlPathMatching("/merchants/spread-.*")).willReturn(aResponse().withStatus(202)
                .withBody("created")));
        for (int i = 0; i < 30; i++) {
            String key = UUID.randomUUID().toString();
            String path = "/merchants/spread-" + i;
            assertThat(send(path, key, "a").block(Duration.ofSeconds(10)).getStatusCode().value()).isEqualTo(202);
            ResponseEntity<String> replay = send(path, key, "a").block(Duration.ofSeconds(10));
            assertThat(replay.getStatusCode().value()).isEqualTo(200);
            assertThat(replay.getBody()).isEqualTo("created");
            assertThat(send(path, key, "b").block(Duration.ofSeconds(10)).getStatusCode().value()).isEqualTo(409);
        }
        upstream.verify(exactly(30), postRequestedFor(urlPathMatching("/merchants/spread-.*")));

        // The records really are spread: every master holds some.
        RedisConnectionFactory connections = gateway.getBean(RedisConnectionFactory.class);
        try (RedisClusterConnection clusterConnection = connections.getClusterConnection()) {
            clusterConnection.clusterGetNodes().forEach(node -> assertThat(
                    clusterConnection.keys(node, "idempotency:{*".getBytes())).as("records on %s", node).isNotEmpty());
        }
        // The operator API's list (a SCAN) walks every master, not just the one it happens to be connected to.
        List<RecordView> listed = gateway.getBean(RecordInspector.class).list(new RecordFilter(Set.of("COMPLETED"),
                Optional.of("onboarding"), Optional.empty(), Duration.ZERO, 10_000)).collectList()
                .block(Duration.ofSeconds(10));
        assertThat(listed).hasSizeGreaterThanOrEqualTo(30);
        // So does the count behind the idempotency.records gauges.
        assertThat(gateway.getBean(RecordInspector.class).count(Duration.ofMinutes(1), 100_000)
                .block(Duration.ofSeconds(10)).completed().getAsLong()).isGreaterThanOrEqualTo(30);
    }

    /**
     * Issue 14, point 2: on a Cluster the index of unsettled records lives in each record's slot, and counts and the
     * operator's list read every slot's part of it, on every master, without a SCAN.
     */
    @Test
    void theIndexOfUnsettledRecordsCountsAndListsThemOnEveryMaster() throws Exception {
        IdempotencyStore store = gateway.getBean(IdempotencyStore.class);
        RecordInspector inspector = gateway.getBean(RecordInspector.class);
        long before = inspector.count(Duration.ofMinutes(1), 0).block(Duration.ofSeconds(30)).uncertain();
        Set<String> uncertain = new HashSet<>();
        Set<Integer> masters = new HashSet<>();
        for (int i = 0; i < 30; i++) {
            IdempotencyScope scope = new IdempotencyScope("", "onboarding", new IdempotencyKey(UUID.randomUUID().toString()));
            OwnerToken owner = OwnerToken.random();
            store.reserve(new ReservationRequest(scope, new Fingerprint("c".repeat(64)), owner, Duration.ofMinutes(1),
                    Duration.ofHours(1), "http://upstream", false, false)).block(Duration.ofSeconds(10));
            store.markUncertain(scope, owner, "response timeout", Duration.ofHours(1)).block(Duration.ofSeconds(10));
            uncertain.add(scope.hash());
            masters.add(cluster.ownerOf(RedisIdempotencyStore.recordKey(scope)));
        }
        assertThat(masters).as("records on every master").hasSize(3);

        assertThat(inspector.count(Duration.ofMinutes(1), 0).block(Duration.ofSeconds(30)).uncertain())
                .isEqualTo(before + 30);
        List<RecordView> listed = inspector.list(new RecordFilter(Set.of("UNCERTAIN"), Optional.empty(),
                Optional.empty(), Duration.ZERO, 10_000)).collectList().block(Duration.ofSeconds(30));
        assertThat(listed).extracting(RecordView::scopeHash).containsAll(uncertain);
    }

    /**
     * The record's slot moves to another master while its request is with the upstream. The client sees nothing of
     * it: the store follows Redis's MOVED redirect, the first request gets its 202, the retry its replay.
     */
    @Test
    void aSlotMovedWhileTheRequestIsInFlightIsInvisibleToTheClient() throws Exception {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/moving")).willReturn(aResponse().withStatus(202)
                .withBody("moved along").withFixedDelay(1500)));
        Mono<ResponseEntity<String>> first = send("/merchants/moving", key, "same").cache();
        first.subscribe();
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .map(t -> upstream.countRequestsMatching(postRequestedFor(urlEqualTo("/merchants/moving")).build()).getCount())
                .filter(n -> n > 0).next().block(Duration.ofSeconds(10));

        String recordKey = RedisIdempotencyStore.recordKey(new IdempotencyScope("", "onboarding", new IdempotencyKey(key)));
        int before = cluster.ownerOf(recordKey);
        int target = cluster.ports().stream().filter(p -> p != before).findFirst().orElseThrow();
        cluster.moveSlotOf(recordKey, target);
        assertThat(cluster.ownerOf(recordKey)).isEqualTo(target);

        assertThat(first.block(Duration.ofSeconds(20)).getStatusCode().value()).isEqualTo(202);
        ResponseEntity<String> retry = send("/merchants/moving", key, "same").block(Duration.ofSeconds(20));
        assertThat(retry.getStatusCode().value()).isEqualTo(200);
        assertThat(retry.getBody()).isEqualTo("moved along");
        assertThat(LocalRedisCluster.cli(target, "hget", recordKey, "state")).isEqualTo("COMPLETED");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/moving")));
    }

    @Test
    void parallelDuplicatesReachTheUpstreamOnceAndWaitersAreWokenInClusterMode() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/cluster-parallel")).willReturn(aResponse().withStatus(202)
                .withBody("once").withFixedDelay(400)));
        List<ResponseEntity<String>> responses = Flux.range(0, 20)
                .flatMap(i -> send("/merchants/cluster-parallel", key, "same"), 20)
                .collectList().block(Duration.ofSeconds(30));
        Map<Integer, Long> statuses = responses.stream()
                .collect(Collectors.groupingBy(r -> r.getStatusCode().value(), Collectors.counting()));
        assertThat(statuses).containsEntry(202, 1L).containsEntry(200, 19L);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/cluster-parallel")));
    }

    /** Releasing writes the record and its release note in one script: one hash tag, one slot, no CROSSSLOT. */
    @Test
    void aReleasedReservationIsFreedInClusterMode() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/cluster-busy")).willReturn(aResponse().withStatus(503)));
        for (int attempt = 0; attempt < 2; attempt++) {
            assertThat(send("/merchants/cluster-busy", key, "same").block(Duration.ofSeconds(10)).getStatusCode()
                    .value()).as("the upstream's own answer, each time").isEqualTo(503);
        }
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo("/merchants/cluster-busy")));
    }
}
