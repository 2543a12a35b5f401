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

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.operator.RecordFilter;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisStoreBuilder;
import dev.retrysafe.gateway.idempotency.store.redis.RedisWakeUps;
import dev.retrysafe.gateway.idempotency.store.redis.WakeUpChannel;
import dev.retrysafe.gateway.idempotency.store.redis.StoreConnection;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.BytesTemplate;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.Marks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The gateway on a real three-master Redis Cluster configured with {@code spring.data.redis.cluster.nodes}: every
 * record lives in one hash slot (its key has a hash tag), records spread over all masters, and the in-flight
 * wake-up works in cluster mode, between instances over the shard channel of the record's slot, which keeps it off
 * the cluster bus (measured here against the classic channel) and follows a slot to its new master. Needs {@code redis-server} and {@code redis-cli} on the PATH (.ci/run installs
 * them); skipped, saying so, where they are missing.
 */
class RedisClusterIntegrationTest {
    static LocalRedisCluster cluster;
    static WireMockServer upstream;
    static final Duration WAIT = Duration.ofSeconds(10);
    static ConfigurableApplicationContext gateway;
    /** For gateway instances reduced to their wake-ups and store, on the same Cluster. */
    static LettuceConnectionFactory connections;
    static ReactiveRedisTemplate<String, byte[]> bytes;
    static StoreConnection storeConnection;
    final List<RedisWakeUps> instances = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Redis Cluster can be started");
        cluster = new LocalRedisCluster(3);
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(),
                Map.of("spring.data.redis.cluster.nodes", cluster.nodes()));
        connections = cluster.connect();
        bytes = BytesTemplate.of(connections);
        storeConnection = StoreConnection.open(connections);
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(connections == null ? null : connections::destroy, gateway,
                upstream == null ? null : upstream::stop, cluster);
    }

    @AfterEach
    void stopInstances() {
        instances.forEach(RedisWakeUps::stop);
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
                Optional.of("onboarding"), Optional.empty(), Optional.empty(), Duration.ZERO, 10_000)).collectList()
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
            store.reserve(new ReservationRequest(scope, Fingerprints.underNoRules(new Fingerprint("c".repeat(64))), owner, Duration.ofMinutes(1),
                    Duration.ofHours(1), "http://upstream", false, false, "", "", Optional.empty()))
                    .block(Duration.ofSeconds(10));
            store.markUncertain(Marks.uncertain(scope, owner, "response timeout", Duration.ofHours(1)))
                    .block(Duration.ofSeconds(10));
            uncertain.add(scope.hash());
            masters.add(cluster.ownerOf(RedisKeyspace.recordKey(scope)));
        }
        assertThat(masters).as("records on every master").hasSize(3);

        assertThat(inspector.count(Duration.ofMinutes(1), 0).block(Duration.ofSeconds(30)).uncertain())
                .isEqualTo(before + 30);
        List<RecordView> listed = inspector.list(new RecordFilter(Set.of("UNCERTAIN"), Optional.empty(),
                Optional.empty(), Optional.empty(), Duration.ZERO, 10_000)).collectList().block(Duration.ofSeconds(30));
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

        String recordKey = RedisKeyspace.recordKey(new IdempotencyScope("", "onboarding", new IdempotencyKey(key)));
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

    /** Releasing writes the record and the released owners in one script: one hash tag, one slot, no CROSSSLOT. */
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

    /**
     * Issue 14: what a wake-up costs the Cluster. Classic PUBLISH is broadcast over the cluster bus to every other
     * node; SPUBLISH stays in the slot's shard (here a master without replicas: nothing leaves it). Counted with
     * CLUSTER INFO's cluster_stats_messages_publish_sent and _publishshard_sent, summed over the nodes.
     */
    @Test
    void aWakeUpOnTheShardChannelStaysOffTheClusterBusWhereAClassicOneGoesToEveryNode() {
        int wakeUps = 30;
        double classic = busMessagesPerWakeUp(WakeUpChannel.CLASSIC, wakeUps);
        double sharded = busMessagesPerWakeUp(WakeUpChannel.SHARDED, wakeUps);
        System.out.printf("Cluster-bus pub/sub messages per wake-up, %d masters, no replicas, %d wake-ups each: "
                + "classic %.2f, sharded %.2f%n", cluster.ports().size(), wakeUps, classic, sharded);

        assertThat(classic).as("broadcast to every other node").isEqualTo(cluster.ports().size() - 1);
        assertThat(sharded).as("not broadcast: the slot's shard has no other node").isZero();
    }

    /** Messages sent over the cluster bus for {@code count} wake-ups between two instances on {@code channel}. */
    private double busMessagesPerWakeUp(WakeUpChannel channel, int count) {
        RedisWakeUps settling = instance(channel);
        RedisWakeUps waiting = instance(channel);
        long before = pubSubBusMessages();
        long listeningNanos = 0;
        for (int i = 0; i < count; i++) {
            listeningNanos += wakeAcross(settling, waiting, newScope());
        }
        long sent = pubSubBusMessages() - before;
        System.out.printf("%s: %d wake-ups, %d bus messages; a waiter listened %.2f ms after registering (mean)%n",
                channel, count, sent, listeningNanos / 1e6 / count);
        return (double) sent / count;
    }

    /**
     * The record's slot moves to another master while a waiter of another instance waits: Redis drops the shard
     * subscription (SUNSUBSCRIBE), the instance subscribes again at the new owner, and the wake-up still arrives.
     */
    @Test
    void aWaiterOnTheShardChannelIsStillWokenAfterItsSlotMovedToAnotherMaster() throws Exception {
        wokenAfterTheSlotMoved(null);
    }

    /**
     * The same while the masters are told the new owner one after the other, the source first: the resubscription
     * sent then is refused (the source answers MOVED to the target, the target, still importing, MOVED back, until
     * Lettuce gives up). Held until the source has refused it; the instance tries again and the wake-up arrives.
     * (Before, this failed whenever the masters' ports came in that order: flaky under load.)
     */
    @Test
    void aWaiterIsStillWokenWhenItsResubscriptionIsRefusedWhileTheSlotIsBetweenMasters() throws Exception {
        wokenAfterTheSlotMoved(source -> {
            long refusedBefore = LocalRedisCluster.commandStat(source, "ssubscribe", "rejected_calls");
            return () -> Flux.interval(Duration.ofMillis(5)).onBackpressureDrop()
                    .concatMap(tick -> Mono.fromCallable(() -> LocalRedisCluster.commandStat(source, "ssubscribe",
                            "rejected_calls")))
                    .filter(refused -> refused > refusedBefore).next().block(WAIT);
        });
    }

    /** {@code betweenMasters}, given the source master's port before the move, says what to do meanwhile; or null. */
    private void wokenAfterTheSlotMoved(BetweenMastersOf betweenMasters) throws Exception {
        RedisWakeUps settling = instance(WakeUpChannel.SHARDED);
        RedisWakeUps waiting = instance(WakeUpChannel.SHARDED);
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        store(settling).reserve(request(scope, owner, false)).block(WAIT);
        try (SettleWaiter waiter = waiting.register(scope.hash())) {
            waiter.listening().block(WAIT);
            store(waiting).reserve(request(scope, OwnerToken.random(), true)).block(WAIT);
            Mono<Void> woken = waiter.settled().cache();
            woken.subscribe();

            String recordKey = RedisKeyspace.recordKey(scope);
            int before = cluster.ownerOf(recordKey);
            int target = cluster.ports().stream().filter(p -> p != before).findFirst().orElseThrow();
            cluster.moveSlotOf(recordKey, target, betweenMasters == null ? null : betweenMasters.of(before));
            // Acknowledged at the new owner: from now on its SPUBLISH reaches the waiting instance.
            String channel = WakeUpChannel.SHARDED.channelOf(scope.hash());
            Flux.interval(Duration.ofMillis(20)).onBackpressureDrop()
                    .concatMap(tick -> Mono.fromCallable(() -> LocalRedisCluster.cli(target, "pubsub", "shardnumsub",
                            channel)))
                    .filter(reply -> reply.endsWith("\n1")).next().block(WAIT);

            store(settling).release(scope, owner).block(WAIT);
            woken.block(WAIT);
        }
    }

    @FunctionalInterface
    private interface BetweenMastersOf {
        LocalRedisCluster.BetweenMasters of(int sourcePort) throws Exception;
    }

    /** Returns how long the waiter took to listen, in nanoseconds. */
    private static long wakeAcross(RedisWakeUps settling, RedisWakeUps waiting, IdempotencyScope scope) {
        OwnerToken owner = OwnerToken.random();
        store(settling).reserve(request(scope, owner, false)).block(WAIT);
        long registered = System.nanoTime();
        try (SettleWaiter waiter = waiting.register(scope.hash())) {
            waiter.listening().block(WAIT);
            long listened = System.nanoTime() - registered;
            // As the filter's second look: the record now says someone waits, so settling it publishes.
            store(waiting).reserve(request(scope, OwnerToken.random(), true)).block(WAIT);
            Mono<Void> woken = waiter.settled().cache();
            woken.subscribe();
            store(settling).release(scope, owner).block(WAIT);
            woken.block(WAIT);
            return listened;
        }
    }

    private RedisWakeUps instance(WakeUpChannel channel) {
        RedisWakeUps wakeUps = RedisWakeUps.on(connections, new SettleSignals(), channel);
        wakeUps.start();
        wakeUps.classicSubscribed().block(WAIT);
        instances.add(wakeUps);
        return wakeUps;
    }

    private static RedisIdempotencyStore store(RedisWakeUps wakeUps) {
        return RedisStoreBuilder.plain(storeConnection, wakeUps);
    }

    private static long pubSubBusMessages() {
        long total = 0;
        for (int port : cluster.ports()) {
            try {
                String info = LocalRedisCluster.cli(port, "cluster", "info");
                total += stat(info, "cluster_stats_messages_publish_sent")
                        + stat(info, "cluster_stats_messages_publishshard_sent");
            } catch (Exception e) {
                throw new IllegalStateException("CLUSTER INFO on " + port, e);
            }
        }
        return total;
    }

    /** A CLUSTER INFO counter; Redis lists a message type only once it has been sent. */
    private static long stat(String clusterInfo, String name) {
        return clusterInfo.lines().filter(line -> line.startsWith(name + ":"))
                .mapToLong(line -> Long.parseLong(line.substring(name.length() + 1).trim())).sum();
    }

    private static IdempotencyScope newScope() {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    private static ReservationRequest request(IdempotencyScope scope, OwnerToken owner, boolean willWait) {
        return new ReservationRequest(scope, Fingerprints.underNoRules(new Fingerprint("a".repeat(64))), owner, Duration.ofSeconds(30),
                Duration.ofMinutes(1), "http://upstream", willWait, false, "POST", "/merchants/wake", Optional.empty());
    }
}
