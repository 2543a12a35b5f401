package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.operator.RecordAges;
import dev.retrysafe.gateway.idempotency.operator.RecordCounts;
import dev.retrysafe.gateway.idempotency.operator.RecordFilter;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.support.Marks;
import dev.retrysafe.gateway.idempotency.support.RedisClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * Issue 14, point 2: the scripts keep an index of unsettled records, so counts and the operator's queue read it
 * instead of every record. Each state change moves a record in or out of it; a record whose TTL ended leaves it at
 * the next count; and with a large store of COMPLETED records the unsettled counts and the list stay as fast as with
 * none (the count of COMPLETED alone still reads every key, and gives up above max-records). On a real redis-server,
 * flushed before each test. {@code -Dunsettled.completed=1000000} makes the large store a million records.
 */
class UnsettledIndexTest {
    static final Duration WAIT = Duration.ofSeconds(30);
    static final Fingerprints FP = Fingerprints.underNoRules(new Fingerprint("a".repeat(64)));
    static RedisClient redis;
    static ReactiveRedisTemplate<String, byte[]> bytes;

    RedisIdempotencyStore store;
    RedisRecordInspector inspector;

    @BeforeAll
    static void startRedis() {
        redis = RedisClient.start();
        bytes = redis.bytes();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @BeforeEach
    void emptyRedis() {
        redis.flush();
        store = RedisStoreBuilder.on(redis.store(), RedisWakeUps.on(redis.connections(), new SettleSignals())).build();
        inspector = new RedisRecordInspector(redis::store, bytes,
                RedisWakeUps.on(redis.connections(), new SettleSignals()),
                EncryptionKeys.none(), false, RedisIdempotencyStore.RELEASED_OWNERS_TTL);
    }

    @Test
    void eachStateChangeMovesTheRecordInOrOutOfTheIndex() {
        IdempotencyScope completed = scope();
        OwnerToken first = reserve(completed);
        assertThat(counts()).isEqualTo(counts(1, 0, 1));
        store.complete(new Completion(completed, first, FP, "http://upstream", accepted(), Duration.ofHours(1),
                Optional.empty())).block(WAIT);
        assertThat(counts()).as("completed: out of the index").isEqualTo(counts(0, 0, 1));

        IdempotencyScope uncertain = scope();
        OwnerToken second = reserve(uncertain);
        store.markUncertain(Marks.uncertain(uncertain, second, "response timeout", Duration.ofHours(1))).block(WAIT);
        assertThat(counts()).isEqualTo(counts(0, 1, 2));
        assertThat(listed()).extracting(RecordView::scopeHash).containsExactly(uncertain.hash());

        IdempotencyScope released = scope();
        OwnerToken third = reserve(released);
        assertThat(counts()).isEqualTo(counts(1, 1, 3));
        store.release(released, third).block(WAIT);
        assertThat(counts()).isEqualTo(counts(0, 1, 2));

        assertThat(inspector.release(uncertain.hash()).block(WAIT)).isEqualTo("UNCERTAIN");
        assertThat(counts()).as("an operator's release").isEqualTo(counts(0, 0, 1));

        IdempotencyScope settled = scope();
        reserve(settled);
        assertThat(inspector.complete(settled.hash(), accepted(), Duration.ofHours(1), "ops", "reconciled")
                .block(WAIT)).isEqualTo("IN_FLIGHT");
        assertThat(counts()).as("an operator's completion").isEqualTo(counts(0, 0, 2));
    }

    @Test
    void aLapsedLeaseMovesTheRecordToUncertainAndARetakeBack() {
        IdempotencyScope scope = scope();
        OwnerToken owner = reserve(scope);
        store.renew(scope, owner, Duration.ofMillis(1)).block(WAIT);
        awaitRedisPast(redisNow() + 5);
        store.reserve(request(scope, OwnerToken.random(), Duration.ofHours(1), false)).block(WAIT);
        assertThat(counts()).as("found lapsed by the next reservation").isEqualTo(counts(0, 1, 1));

        store.reserve(request(scope, OwnerToken.random(), Duration.ofHours(1), true)).block(WAIT);
        assertThat(counts()).as("retaken: in flight again").isEqualTo(counts(1, 0, 1));
    }

    /**
     * Issue 22 point 4: the age of the oldest IN_FLIGHT, UNCERTAIN and process-pending record, read with the counts
     * and by Redis's clock. The records are made "long ago" by moving their index entry (and, for the process, its
     * record's completed_at) back in time rather than by waiting; the process queue's score is a poll time, not
     * when the process began, so a process polled again lately is still as old as its 202.
     */
    @Test
    void theOldestUnsettledRecordOfEachKindIsAsOldAsItsIndexEntrySaysByRedisClock() {
        assertThat(inspector.count(Duration.ofMinutes(1), 0).block(WAIT).oldest()).as("none: 0")
                .isEqualTo(RecordAges.NONE);

        IdempotencyScope uncertain = scope();
        store.markUncertain(Marks.uncertain(uncertain, reserve(uncertain), "response timeout", Duration.ofHours(1))).block(WAIT);
        IdempotencyScope recentlyUncertain = scope();
        store.markUncertain(Marks.uncertain(recentlyUncertain, reserve(recentlyUncertain), "response timeout", Duration.ofHours(1)))
                .block(WAIT);
        bytes.opsForZSet().add(RedisKeyspace.uncertainKey(uncertain.hash()), utf8(uncertain.hash()),
                redisNow() - 120_000).block(WAIT);
        IdempotencyScope inFlight = scope();
        reserve(inFlight);
        bytes.opsForZSet().add(RedisKeyspace.inFlightKey(inFlight.hash()), utf8(inFlight.hash()),
                redisNow() - 30_000).block(WAIT);
        IdempotencyScope process = scope();
        store.complete(new Completion(process, reserve(process), FP, "http://upstream", accepted(),
                Duration.ofHours(1), Optional.of("job-1"))).block(WAIT);
        bytes.<String, byte[]>opsForHash().put(RedisKeyspace.recordKey(process), "completed_at",
                utf8(Long.toString(redisNow() - 600_000))).block(WAIT);
        bytes.opsForZSet().add(RedisKeyspace.PROCESSES.queueKey(process.hash()), utf8(process.hash()),
                redisNow() + 60_000).block(WAIT);

        RecordAges ages = inspector.count(Duration.ofMinutes(1), 0).block(WAIT).oldest();
        // Lower bounds exact, upper bounds generous: a busy machine may take long between the writes and the count.
        assertThat(ages.uncertain()).isBetween(Duration.ofSeconds(120), Duration.ofSeconds(120).plus(WAIT));
        assertThat(ages.inFlight()).isBetween(Duration.ofSeconds(30), Duration.ofSeconds(30).plus(WAIT));
        assertThat(ages.processPending()).as("since the 202, not since the last poll")
                .isBetween(Duration.ofSeconds(600), Duration.ofSeconds(600).plus(WAIT));

        assertThat(inspector.release(uncertain.hash()).block(WAIT)).isEqualTo("UNCERTAIN");
        assertThat(inspector.count(Duration.ofMinutes(1), 0).block(WAIT).oldest().uncertain())
                .as("the next oldest, made a moment ago").isLessThan(Duration.ofSeconds(120));
    }

    /**
     * A first write does not clear the UNCERTAIN index (one call fewer in every reserve): the entry an UNCERTAIN record
     * left when its TTL ended stays until a count drops it. Its successor, a fresh IN_FLIGHT record of the same scope,
     * is counted and listed once, as what it is.
     */
    @Test
    void aStaleUncertainEntryOfAVanishedRecordNeverMakesItsSuccessorLookUncertain() {
        IdempotencyScope scope = scope();
        store.markUncertain(Marks.uncertain(scope, reserve(scope), "response timeout", Duration.ofHours(1)))
                .block(WAIT);
        bytes.delete(RedisKeyspace.recordKey(scope)).block(WAIT);
        reserve(scope);
        assertThat(bytes.opsForZSet().size(RedisKeyspace.uncertainKey(scope.hash())).block(WAIT))
                .as("the stale entry is still there before any count").isEqualTo(1);

        assertThat(listed()).as("listed once, from the index of its own state")
                .extracting(RecordView::scopeHash, RecordView::state).containsExactly(tuple(scope.hash(), "IN_FLIGHT"));
        assertThat(counts()).isEqualTo(counts(1, 0, 1));
        assertThat(bytes.opsForZSet().size(RedisKeyspace.uncertainKey(scope.hash())).block(WAIT))
                .as("dropped by the count").isZero();
        assertThat(inspector.count(Duration.ofMinutes(1), Long.MAX_VALUE).block(WAIT).oldest().uncertain())
                .as("no UNCERTAIN age either").isEqualTo(Duration.ZERO);
    }

    @Test
    void aRecordWhoseTtlEndedLeavesTheIndexAtTheNextCount() {
        IdempotencyScope scope = scope();
        store.reserve(request(scope, OwnerToken.random(), Duration.ofMillis(50), false)).block(WAIT);
        awaitRedisPast(redisNow() + 60);
        assertThat(counts()).isEqualTo(counts(0, 0, 0));
        assertThat(bytes.opsForZSet().size(RedisKeyspace.inFlightKey(scope.hash())).block(WAIT)).isZero();
    }

    @Test
    void recordsLeftUnsettledByAVersionWithoutTheIndexAreAddedOnceForTheFleet() {
        IdempotencyScope old = scope();
        bytes.<String, byte[]>opsForHash().putAll(RedisKeyspace.recordKey(old), Map.of(
                "state", utf8("UNCERTAIN"), "uncertain_at", utf8("1700000000000"))).block(WAIT);

        assertThat(counts().uncertain()).as("found by the first count after the upgrade").isEqualTo(1);
        assertThat(listed()).extracting(RecordView::scopeHash).containsExactly(old.hash());

        IdempotencyScope later = scope();
        bytes.<String, byte[]>opsForHash().putAll(RedisKeyspace.recordKey(later), Map.of(
                "state", utf8("UNCERTAIN"), "uncertain_at", utf8("1700000000000"))).block(WAIT);
        RedisRecordInspector anotherInstance = new RedisRecordInspector(redis::store, bytes,
                RedisWakeUps.on(redis.connections(), new SettleSignals()), EncryptionKeys.none(), false,
                RedisIdempotencyStore.RELEASED_OWNERS_TTL);
        assertThat(anotherInstance.count(Duration.ofMinutes(1), Long.MAX_VALUE).block(WAIT).uncertain())
                .as("done once for the fleet: no second SCAN").isEqualTo(1);
    }

    @Test
    void aLargeStoreOfCompletedRecordsCostsTheUnsettledCountsAndListNothing() {
        int completed = Integer.getInteger("unsettled.completed", 200_000);
        for (int i = 0; i < 100; i++) {
            IdempotencyScope scope = scope();
            store.markUncertain(Marks.uncertain(scope, reserve(scope), "response timeout", Duration.ofHours(1))).block(WAIT);
        }
        // Warm the client path, and time the same with no COMPLETED record at all.
        inspector.count(Duration.ofMinutes(1), 0).block(WAIT);
        long start = System.nanoTime();
        inspector.count(Duration.ofMinutes(1), 0).block(WAIT);
        long emptyStoreMillis = (System.nanoTime() - start) / 1_000_000;
        fillCompleted(completed);

        start = System.nanoTime();
        RecordCounts unsettledOnly = inspector.count(Duration.ofMinutes(1), 0).block(WAIT);
        long countMillis = (System.nanoTime() - start) / 1_000_000;
        start = System.nanoTime();
        List<RecordView> queue = listed();
        long listMillis = (System.nanoTime() - start) / 1_000_000;
        start = System.nanoTime();
        RecordCounts all = inspector.count(Duration.ofMinutes(1), Long.MAX_VALUE).block(WAIT);
        long fullMillis = (System.nanoTime() - start) / 1_000_000;
        System.out.printf("%d COMPLETED + 100 UNCERTAIN records: unsettled counts in %d ms (%d ms with no COMPLETED "
                + "record), the operator's list (%d records) in %d ms; with the COMPLETED count (every key read) %d ms%n",
                completed, countMillis, emptyStoreMillis, queue.size(), listMillis, fullMillis);

        assertThat(withoutAges(unsettledOnly)).isEqualTo(new RecordCounts(0, 100, OptionalLong.empty(), 0, 0,
                RecordAges.NONE));
        assertThat(queue).hasSize(100).allSatisfy(v -> assertThat(v.state()).isEqualTo("UNCERTAIN"));
        assertThat(all.completed()).hasValue(completed);
    }

    /** Records as the complete script leaves them, written inside Redis in batches. */
    private void fillCompleted(int count) {
        RedisScript<Long> fill = RedisScript.of("""
                for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do
                  redis.call('HSET', 'idempotency:{filled-' .. i .. '}', 'state', 'COMPLETED', 'status', '202')
                end
                return 1""", Long.class);
        for (int from = 0; from < count; from += 50_000) {
            bytes.execute(fill, List.of(), List.of(utf8(Integer.toString(from)),
                    utf8(Integer.toString(Math.min(count, from + 50_000) - 1)))).blockLast(WAIT);
        }
    }

    /** The counts alone: the ages move with the clock (aRecordsAgeIsReadByRedisClockFromTheIndex checks them). */
    private RecordCounts counts() {
        return withoutAges(inspector.count(Duration.ofMinutes(1), Long.MAX_VALUE).block(WAIT));
    }

    static RecordCounts withoutAges(RecordCounts counts) {
        return new RecordCounts(counts.inFlight(), counts.uncertain(), counts.completed(), counts.pending(),
                counts.processesPending(), RecordAges.NONE);
    }

    private static RecordCounts counts(long inFlight, long uncertain, long records) {
        return new RecordCounts(inFlight, uncertain, OptionalLong.of(records - inFlight - uncertain), 0, 0,
                RecordAges.NONE);
    }

    private List<RecordView> listed() {
        return inspector.list(new RecordFilter(Set.of("IN_FLIGHT", "UNCERTAIN"), Optional.empty(), Optional.empty(),
                Optional.empty(), Duration.ZERO, 1_000)).collectList().block(WAIT);
    }

    private OwnerToken reserve(IdempotencyScope scope) {
        OwnerToken owner = OwnerToken.random();
        store.reserve(request(scope, owner, Duration.ofHours(1), false)).block(WAIT);
        return owner;
    }

    private static ReservationRequest request(IdempotencyScope scope, OwnerToken owner, Duration recordTtl,
            boolean retakeUncertain) {
        return new ReservationRequest(scope, FP, owner, Duration.ofSeconds(30), recordTtl, "http://upstream", false,
                retakeUncertain, "", "", Optional.empty());
    }

    private static StoredResponse accepted() {
        return new StoredResponse(202, List.of(), utf8("{}"), false);
    }

    private static IdempotencyScope scope() {
        return new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    private static void awaitRedisPast(long millis) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (redisNow() <= millis && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
    }

    private static long redisNow() {
        return redis.nowMillis();
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
