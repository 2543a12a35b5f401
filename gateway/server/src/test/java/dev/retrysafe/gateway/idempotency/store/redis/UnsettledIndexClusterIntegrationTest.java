package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.operator.RecordAges;
import dev.retrysafe.gateway.idempotency.operator.RecordCounts;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.redis.UnsettledIndex.Member;
import dev.retrysafe.gateway.idempotency.store.redis.UnsettledIndex.Reads;
import dev.retrysafe.gateway.support.BytesTemplate;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.Marks;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;

/**
 * The record counts' index read by master on a real three-master Redis Cluster (Redis 7+): a count or list costs a
 * few script calls per master instead of one per slot (counted with INFO commandstats on the masters), says exactly
 * what the slot-by-slot reading says, and stays complete when a slot has moved to another master behind the
 * client's back (its calls fall back to slot by slot). Its own Cluster, so that nothing else calls scripts there.
 * Needs {@code redis-server} and {@code redis-cli} on the PATH; skipped, saying so, where they are missing.
 */
class UnsettledIndexClusterIntegrationTest {
    static final Duration WAIT = Duration.ofSeconds(60);
    static final Fingerprints FP = Fingerprints.underNoRules(new Fingerprint("d".repeat(64)));
    static LocalRedisCluster cluster;

    /** Per test, so that Lettuce's view of the topology is read afresh. */
    LettuceConnectionFactory connections;
    ReactiveRedisTemplate<String, byte[]> bytes;
    StoreConnection storeConnection;
    RedisWakeUps wakeUps;
    RedisIdempotencyStore store;

    @BeforeAll
    static void startCluster() throws Exception {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Redis Cluster can be started");
        cluster = new LocalRedisCluster(3);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @BeforeEach
    void connect() throws Exception {
        for (int port : cluster.ports()) {
            LocalRedisCluster.cli(port, "flushall");
        }
        connections = cluster.connect();
        bytes = BytesTemplate.of(connections);
        wakeUps = RedisWakeUps.on(connections, new SettleSignals());
        wakeUps.start();
        wakeUps.classicSubscribed().block(WAIT);
        storeConnection = StoreConnection.open(connections);
        store = RedisStoreBuilder.plain(storeConnection, wakeUps);
    }

    @AfterEach
    void disconnect() {
        wakeUps.stop();
        storeConnection.close();
        connections.destroy();
    }

    @Test
    void aCountAndAListByMasterCostAFewCallsPerMasterAndSayWhatSlotBySlotSays() throws Exception {
        Set<Integer> masters = new HashSet<>();
        Set<Integer> inFlightSlots = new HashSet<>();
        Set<Integer> uncertainSlots = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            IdempotencyScope scope = reserve(newScope()).scope();
            masters.add(cluster.ownerOf(RedisKeyspace.recordKey(scope)));
            inFlightSlots.add(SlotHash.getSlot(scope.hash()));
        }
        // Two records of one slot among them: a list takes at most so many per state and slot, either way.
        List<IdempotencyScope> sameSlot = twoScopesOfOneSlot();
        for (int i = 0; i < 20; i++) {
            IdempotencyScope scope = i < 2 ? sameSlot.get(i) : newScope();
            uncertain(scope);
            uncertainSlots.add(SlotHash.getSlot(scope.hash()));
        }
        for (int slot : List.of(100, 6000, 12000)) {
            // A member of the slot, as a real scope hash is: the count reads its record.
            String tag = RedisKeyspace.slotTagOf(slot);
            bytes.opsForZSet().add(RedisKeyspace.PROCESSES.queueKeyOfTag(tag), utf8(tag), 1).block(WAIT);
        }
        assertThat(masters).as("records on every master").hasSize(3);

        UnsettledIndex byMaster = new UnsettledIndex(() -> storeConnection, bytes, Reads.BY_MASTER);
        UnsettledIndex slotBySlot = new UnsettledIndex(() -> storeConnection, bytes, Reads.SLOT_BY_SLOT);
        // The first calls load the scripts (NOSCRIPT, then EVAL) and mark the index backfilled.
        slotBySlot.count(Duration.ZERO).block(WAIT);
        byMaster.count(Duration.ZERO).block(WAIT);

        long before = scriptCalls();
        RecordCounts counted = byMaster.count(Duration.ZERO).block(WAIT);
        long byMasterCalls = scriptCalls() - before;
        before = scriptCalls();
        RecordCounts countedSlotBySlot = slotBySlot.count(Duration.ZERO).block(WAIT);
        long slotBySlotCalls = scriptCalls() - before;
        before = scriptCalls();
        List<Member> listed = byMaster.list(1).collectList().block(WAIT);
        long listCalls = scriptCalls() - before;
        List<Member> listedSlotBySlot = slotBySlot.list(1).collectList().block(WAIT);
        System.out.printf("Index of unsettled records on %d masters: a count takes %d script calls by master, %d "
                + "slot by slot; a list %d by master%n", cluster.ports().size(), byMasterCalls, slotBySlotCalls,
                listCalls);

        assertThat(withoutAges(counted)).isEqualTo(new RecordCounts(20, 20, OptionalLong.empty(), 20, 3,
                RecordAges.NONE)).isEqualTo(withoutAges(countedSlotBySlot));
        assertThat(byMasterCalls).as("a few per master: 16,384 slots / 1,024 a call, plus the ranges' ends")
                .isBetween(3L, 30L);
        assertThat(slotBySlotCalls).isEqualTo(RedisKeyspace.SLOTS);
        assertThat(listCalls).isBetween(3L, 30L);
        assertThat(listed).as("one per state and slot").hasSize(inFlightSlots.size() + uncertainSlots.size())
                .isEqualTo(listedSlotBySlot);
        assertThat(listed).filteredOn(m -> sameSlot.stream().anyMatch(s -> s.hash().equals(m.scopeHash())))
                .as("of the two UNCERTAIN records of one slot, one").hasSize(1);
        // The process queue's slots, as the directory's restore reads them: the same three either way.
        before = scriptCalls();
        List<UnsettledIndex.QueuedSlot> queued = byMaster.queuedSlots(RedisKeyspace.PROCESSES.queuePrefix()).collectList().block(WAIT);
        long processCalls = scriptCalls() - before;
        assertThat(queued).extracting(UnsettledIndex.QueuedSlot::tag)
                .containsExactly(RedisKeyspace.slotTagOf(100), RedisKeyspace.slotTagOf(6000), RedisKeyspace.slotTagOf(12000));
        assertThat(queued).extracting(UnsettledIndex.QueuedSlot::earliestPoll).containsOnly(1L);
        assertThat(slotBySlot.queuedSlots(RedisKeyspace.PROCESSES.queuePrefix()).collectList().block(WAIT)).isEqualTo(queued);
        assertThat(processCalls).isBetween(3L, 30L);

        System.out.printf("One count of the index on %d masters (median of 5, ms): slot by slot %d, by master %d%n",
                cluster.ports().size(), medianMillis(() -> slotBySlot.count(Duration.ZERO).block(WAIT)),
                medianMillis(() -> byMaster.count(Duration.ZERO).block(WAIT)));
    }

    /**
     * The oldest UNCERTAIN record's age, by its own master's clock, is the greatest of the masters' answers, read by
     * master as slot by slot: made an hour old by moving its index entry back, on whichever master holds it.
     */
    @Test
    void theOldestRecordsAgeIsTheGreatestOfTheMastersByMasterAsSlotBySlot() throws Exception {
        Set<Integer> masters = new HashSet<>();
        IdempotencyScope old = null;
        while (masters.size() < 3) {
            IdempotencyScope scope = newScope();
            uncertain(scope);
            masters.add(cluster.ownerOf(RedisKeyspace.recordKey(scope)));
            old = old == null ? scope : old;
        }
        String index = RedisKeyspace.uncertainKey(old.hash());
        long masterNow = Long.parseLong(LocalRedisCluster.cli(cluster.ownerOf(index), "time").lines().findFirst()
                .orElseThrow().trim()) * 1000;
        bytes.opsForZSet().add(index, utf8(old.hash()), masterNow - 3_600_000).block(WAIT);

        for (Reads reads : List.of(Reads.BY_MASTER, Reads.SLOT_BY_SLOT)) {
            RecordAges ages = new UnsettledIndex(() -> storeConnection, bytes, reads).count(Duration.ZERO).block(WAIT)
                    .oldest();
            assertThat(ages.uncertain()).as(reads.name())
                    .isBetween(Duration.ofHours(1), Duration.ofHours(1).plus(WAIT).plusSeconds(1));
            assertThat(ages.inFlight()).as(reads.name()).isZero();
        }
    }

    /**
     * A slot moves to another master after the client read the topology (Lettuce is not told: no topology refresh
     * here). The call that covered it fails at the old master ("non local key"), its slots are read one by one, and
     * the count and list are still complete.
     */
    @Test
    void aSlotMovedToAnotherMasterBehindTheClientsBackIsStillCounted() throws Exception {
        List<String> uncertain = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            IdempotencyScope scope = newScope();
            uncertain(scope);
            uncertain.add(scope.hash());
        }
        UnsettledIndex byMaster = new UnsettledIndex(() -> storeConnection, bytes, Reads.BY_MASTER);
        assertThat(byMaster.count(Duration.ZERO).block(WAIT).uncertain()).isEqualTo(10);

        String moved = RedisKeyspace.uncertainKey(uncertain.get(0));
        int source = cluster.ownerOf(moved);
        int target = cluster.ports().stream().filter(p -> p != source).findFirst().orElseThrow();
        cluster.moveSlotOf(moved, target);
        assertThat(cluster.ownerOf(moved)).isEqualTo(target);
        long failedBefore = LocalRedisCluster.commandStat(source, "evalsha", "failed_calls")
                + LocalRedisCluster.commandStat(source, "eval", "failed_calls");

        assertThat(withoutAges(byMaster.count(Duration.ZERO).block(WAIT)))
                .isEqualTo(new RecordCounts(0, 10, OptionalLong.empty(), 0, 0, RecordAges.NONE));
        assertThat(byMaster.list(10).collectList().block(WAIT)).extracting(Member::scopeHash)
                .containsExactlyInAnyOrderElementsOf(uncertain);
        assertThat(LocalRedisCluster.commandStat(source, "evalsha", "failed_calls")
                + LocalRedisCluster.commandStat(source, "eval", "failed_calls"))
                .as("the old master refused the call that covered the moved slot").isGreaterThan(failedBefore);
    }

    /**
     * A master refuses the script that reads many slots (here: over its maxmemory, where Redis 7 refuses a flagged
     * script that may write before it runs): its slots are read one by one, and the count is the same.
     */
    @Test
    void aMasterThatRefusesTheByMasterScriptIsReadSlotBySlot() throws Exception {
        for (int i = 0; i < 10; i++) {
            uncertain(newScope());
        }
        UnsettledIndex byMaster = new UnsettledIndex(() -> storeConnection, bytes, Reads.BY_MASTER);
        RecordCounts expected = new UnsettledIndex(() -> storeConnection, bytes, Reads.SLOT_BY_SLOT)
                .count(Duration.ZERO).block(WAIT);
        int full = cluster.ports().get(0);
        LocalRedisCluster.cli(full, "config", "set", "maxmemory", "1");
        try {
            long before = scriptCalls();
            assertThat(withoutAges(byMaster.count(Duration.ZERO).block(WAIT))).isEqualTo(withoutAges(expected))
                    .isEqualTo(new RecordCounts(0, 10, OptionalLong.empty(), 0, 0, RecordAges.NONE));
            assertThat(scriptCalls() - before).as("that master's slots one by one, the others' by master")
                    .isGreaterThan(RedisKeyspace.SLOTS / 4).isLessThan(RedisKeyspace.SLOTS);
        } finally {
            LocalRedisCluster.cli(full, "config", "set", "maxmemory", "0");
        }
    }

    private ReservationRequest reserve(IdempotencyScope scope) {
        ReservationRequest request = new ReservationRequest(scope, FP, OwnerToken.random(), Duration.ofMinutes(1),
                Duration.ofHours(1), "http://upstream", false, false, "", "", Optional.empty());
        store.reserve(request).block(WAIT);
        return request;
    }

    private void uncertain(IdempotencyScope scope) {
        store.markUncertain(Marks.uncertain(scope, reserve(scope).owner(), "response timeout", Duration.ofHours(1))).block(WAIT);
    }

    private static List<IdempotencyScope> twoScopesOfOneSlot() {
        Map<Integer, IdempotencyScope> bySlot = new HashMap<>();
        while (true) {
            IdempotencyScope scope = newScope();
            IdempotencyScope other = bySlot.putIfAbsent(SlotHash.getSlot(scope.hash()), scope);
            if (other != null) {
                return List.of(other, scope);
            }
        }
    }

    /** Script calls (EVALSHA and EVAL) on all masters so far. */
    private static long scriptCalls() throws Exception {
        long calls = 0;
        for (int port : cluster.ports()) {
            calls += LocalRedisCluster.commandStat(port, "evalsha", "calls")
                    + LocalRedisCluster.commandStat(port, "eval", "calls");
        }
        return calls;
    }

    private static long medianMillis(Supplier<?> run) {
        List<Long> millis = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            long start = System.nanoTime();
            run.get();
            millis.add((System.nanoTime() - start) / 1_000_000);
        }
        return millis.stream().sorted().toList().get(2);
    }

    private static IdempotencyScope newScope() {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** The counts alone: the ages move with the clock between two counts. */
    private static RecordCounts withoutAges(RecordCounts counts) {
        return new RecordCounts(counts.inFlight(), counts.uncertain(), counts.completed(), counts.pending(),
                counts.processesPending(), RecordAges.NONE);
    }
}
