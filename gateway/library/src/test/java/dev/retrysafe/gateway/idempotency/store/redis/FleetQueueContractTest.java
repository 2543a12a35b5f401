package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.LookupValues;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue.PollResult;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue.LookupResult;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.FleetQueueKeys;
import dev.retrysafe.gateway.idempotency.support.Marks;
import dev.retrysafe.gateway.idempotency.support.RedisClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * One contract for the fleet's two queues kept per Cluster slot ({@link RedisFleetQueue}): the pending processes and
 * the lookups of UNCERTAIN records, each driven through its own public queue and filled by the store's own steps (a
 * 202 naming a process, a record marked UNCERTAIN with lookup values). The directory, the per-slot claim, the next
 * look and the directory's restore must behave the same in both; on a real redis-server, flushed before each test.
 */
class FleetQueueContractTest {
    static final Duration WAIT = Duration.ofSeconds(10);
    static final Duration CLAIM = Duration.ofSeconds(15);
    static final Fingerprints PAYLOAD = Fingerprints.underNoRules(new Fingerprint("a".repeat(64)));
    static RedisClient redis;
    static ReactiveRedisTemplate<String, byte[]> bytes;

    RedisIdempotencyStore store;
    final IdempotencyScope scope = scope();

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
        store = RedisStoreBuilder.on(redis.store(), RedisWakeUps.on(redis.connections(), new SettleSignals()))
                .firstProcessPoll(Duration.ofMillis(1)).build();
    }

    /** What a queue does with one claimed entry while it is claimed, and whether its work is then done. */
    interface Work {
        Mono<Void> during(String scopeHash);
    }

    /** One of the two queues, seen through its public API. */
    enum Kind {
        PROCESSES(RedisKeyspace.PROCESSES) {
            @Override
            void queueWork(RedisIdempotencyStore store, IdempotencyScope scope) {
                StoredResponse accepted = new StoredResponse(202, List.of(),
                        "{\"processId\":\"p-1\"}".getBytes(StandardCharsets.UTF_8), false);
                store.complete(new Completion(scope, OwnerToken.random(), PAYLOAD, "http://upstream", accepted,
                        Duration.ofDays(7), Optional.of("p-1"))).block(WAIT);
            }

            @Override
            List<String> claim(IdempotencyScope scope, Work work, boolean done, Duration claim) {
                List<String> claimed = new CopyOnWriteArrayList<>();
                new RedisProcessQueue(redis::store, bytes, false).pollDue(32, claim, Duration.ofSeconds(60), due -> {
                    claimed.add(due.scopeHash());
                    return work.during(due.scopeHash()).thenReturn(done
                            ? new PollResult.Ended("COMPLETED", Duration.ofHours(1))
                            : PollResult.RUNNING);
                }).block(WAIT);
                return own(scope, claimed);
            }

            @Override
            Mono<Void> lookSoonAroundAStoreStep(String scopeHash, Duration delay) {
                return RedisProcessQueue.lookSoon(redis.store(), scopeHash, delay);
            }

            @Override
            Function<Duration, Mono<Integer>> restoreOfAnInstance() {
                return new RedisProcessQueue(redis::store, bytes, false)::restoreLostSlots;
            }
        },
        LOOKUPS(RedisKeyspace.LOOKUPS) {
            @Override
            void queueWork(RedisIdempotencyStore store, IdempotencyScope scope) {
                OwnerToken owner = OwnerToken.random();
                store.reserve(new ReservationRequest(scope, PAYLOAD, owner, Duration.ofMinutes(1), Duration.ofHours(1),
                        "http://upstream", false, false, "POST", "/orders",
                        Optional.of(new LookupValues(Map.of("key", "order-1"), Duration.ofMillis(1))))).block(WAIT);
                store.markUncertain(Marks.uncertain(scope, owner, "response timeout", Duration.ofHours(1))).block(WAIT);
            }

            @Override
            List<String> claim(IdempotencyScope scope, Work work, boolean done, Duration claim) {
                RedisReconcileQueue queue = lookups();
                List<String> claimed = queue.claimDue(32, claim)
                        .concatMap(due -> work.during(due.scopeHash())
                                .then(done ? queue.settle(due, new LookupResult.NotFound("not there"))
                                        : Mono.just(false))
                                .thenReturn(due.scopeHash()))
                        .collectList().block(WAIT);
                return own(scope, claimed);
            }

            @Override
            Mono<Void> lookSoonAroundAStoreStep(String scopeHash, Duration delay) {
                return RedisReconcileQueue.lookSoon(redis.store(), scopeHash, delay);
            }

            @Override
            Function<Duration, Mono<Integer>> restoreOfAnInstance() {
                return lookups()::restoreLostSlots;
            }
        };

        final FleetQueueKeys keys;

        Kind(FleetQueueKeys keys) {
            this.keys = keys;
        }

        /** The store step that queues work for the record, due at once (or within a millisecond). */
        abstract void queueWork(RedisIdempotencyStore store, IdempotencyScope scope);

        /** One round of this instance's claims, each for {@code claim}: the claimed entries of {@code scope}. */
        abstract List<String> claim(IdempotencyScope scope, Work work, boolean done, Duration claim);

        List<String> claim(IdempotencyScope scope, Work work, boolean done) {
            return claim(scope, work, done, CLAIM);
        }

        abstract Mono<Void> lookSoonAroundAStoreStep(String scopeHash, Duration delay);

        /** A new instance's restore, which takes the fleet's turn for the interval. */
        abstract Function<Duration, Mono<Integer>> restoreOfAnInstance();

        List<String> claimOwn(IdempotencyScope scope) {
            return claim(scope, any -> Mono.empty(), false);
        }

        /** The restore itself, whoever's turn it is. */
        Mono<Integer> restoreNow() {
            return new RedisFleetQueue(redis::store, new UnsettledIndex(redis::store, bytes, false), keys)
                    .restoreLostSlotsNow();
        }

        private static RedisReconcileQueue lookups() {
            return new RedisReconcileQueue(redis::store, bytes, 1024, EncryptionKeys.none(),
                    RedisIdempotencyStore.RELEASED_OWNERS_TTL, Duration.ofSeconds(1), false);
        }

        private static List<String> own(IdempotencyScope scope, List<String> claimed) {
            return claimed.stream().filter(scope.hash()::equals).toList();
        }
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void workIsQueuedInItsRecordsSlotAndTheDirectorySaysToLookThereSoon(Kind kind) {
        kind.queueWork(store, scope);

        String queue = kind.keys.queueKey(scope.hash());
        assertThat(queue).isEqualTo(kind.keys.queuePrefix() + "{" + RedisKeyspace.slotTag(scope.hash()) + "}");
        assertThat(score(queue, scope.hash())).isBetween(redisNow() - 1_000, redisNow() + 100);
        assertThat(score(kind.keys.directory(), RedisKeyspace.slotTag(scope.hash())))
                .isBetween(redisNow() - 1_000, redisNow() + 100);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aSlotIsOnlyLookedIntoWhenTheDirectorySaysSo(Kind kind) {
        kind.queueWork(store, scope);
        awaitDue(kind);
        String tag = RedisKeyspace.slotTag(scope.hash());
        bytes.opsForZSet().add(kind.keys.directory(), utf8(tag), redisNow() + 3_600_000).block(WAIT);
        assertThat(kind.claimOwn(scope)).as("not its turn").isEmpty();

        bytes.opsForZSet().add(kind.keys.directory(), utf8(tag), redisNow()).block(WAIT);
        assertThat(kind.claimOwn(scope)).containsExactly(scope.hash());
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aClaimedEntryIsNotClaimedByAnotherInstanceWhileItsClaimLasts(Kind kind) {
        kind.queueWork(store, scope);
        awaitDue(kind);
        List<List<String>> meanwhile = new CopyOnWriteArrayList<>();
        // The directory brought forward meanwhile (another step in the slot): only the entry's claim holds it back.
        // The other instance's claim blocks, so off the thread that reads this connection's replies.
        List<String> claimed = kind.claim(scope, scopeHash -> kind.lookSoonAroundAStoreStep(scopeHash, Duration.ZERO)
                .then(Mono.<Void>fromRunnable(() -> meanwhile.add(kind.claimOwn(scope)))
                        .subscribeOn(Schedulers.boundedElastic())), false);

        assertThat(claimed).containsExactly(scope.hash());
        assertThat(meanwhile).containsExactly(List.of());
    }

    /**
     * Out of the directory at once where the slot's next look is set after the work (process polls), at the look
     * after where it is set before it (lookups: their claim must answer within a store timeout, the lookups take
     * longer), which is at most one claim later.
     */
    @ParameterizedTest
    @EnumSource(Kind.class)
    void aSlotWhoseWorkIsDoneLeavesTheDirectoryByItsNextLook(Kind kind) {
        kind.queueWork(store, scope);
        awaitDue(kind);
        Duration claim = Duration.ofMillis(200);
        assertThat(kind.claim(scope, any -> Mono.empty(), true, claim)).containsExactly(scope.hash());
        assertThat(bytes.opsForZSet().size(kind.keys.queueKey(scope.hash())).block(WAIT)).isZero();
        String tag = RedisKeyspace.slotTag(scope.hash());
        Double nextLook = bytes.opsForZSet().score(kind.keys.directory(), utf8(tag)).block(WAIT);
        if (nextLook != null) {
            assertThat(nextLook.longValue()).as("within one claim").isLessThanOrEqualTo(redisNow() + claim.toMillis());
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (redisNow() <= nextLook.longValue() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(kind.claimOwn(scope)).isEmpty();
        }
        assertThat(bytes.opsForZSet().size(kind.keys.directory()).block(WAIT)).isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void afterLookingIntoASlotTheDirectoryKeepsASoonerLookAskedForMeanwhile(Kind kind) {
        kind.queueWork(store, scope);
        awaitDue(kind);
        String tag = RedisKeyspace.slotTag(scope.hash());
        List<Long> soonerAt = new CopyOnWriteArrayList<>();
        kind.claim(scope, scopeHash -> kind.lookSoonAroundAStoreStep(scopeHash, Duration.ofMillis(50))
                .then(bytes.opsForZSet().score(kind.keys.directory(), utf8(tag)))
                .doOnNext(score -> soonerAt.add(score.longValue()))
                .then(), false);

        assertThat(soonerAt).hasSize(1);
        assertThat(score(kind.keys.directory(), tag)).as("not pushed back after the look").isEqualTo(soonerAt.get(0));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aSlotTheDirectoryLostIsPutBackAtItsEarliestEntryAndItsWorkIsClaimed(Kind kind) {
        kind.queueWork(store, scope);
        awaitDue(kind);
        String tag = RedisKeyspace.slotTag(scope.hash());
        // The directory's write lost with its master (refused while it was down, or not replicated before a failover).
        bytes.delete(kind.keys.directory()).block(WAIT);
        assertThat(kind.claimOwn(scope)).as("nothing says where to look").isEmpty();

        assertThat(kind.restoreNow().block(WAIT)).isEqualTo(1);
        assertThat(score(kind.keys.directory(), tag)).isEqualTo(score(kind.keys.queueKey(scope.hash()), scope.hash()));
        assertThat(kind.claimOwn(scope)).containsExactly(scope.hash());
        assertThat(kind.restoreNow().block(WAIT)).as("nothing lost any more").isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void theFleetRestoresOncePerIntervalWhicheverInstanceTakesTheTurn(Kind kind) {
        kind.queueWork(store, scope);
        Function<Duration, Mono<Integer>> one = kind.restoreOfAnInstance();
        Function<Duration, Mono<Integer>> another = kind.restoreOfAnInstance();
        bytes.delete(kind.keys.directory()).block(WAIT);

        assertThat(one.apply(Duration.ofMinutes(1)).block(WAIT)).as("its turn").isEqualTo(1);
        bytes.delete(kind.keys.directory()).block(WAIT);
        assertThat(another.apply(Duration.ofMinutes(1)).block(WAIT)).as("not its turn").isZero();
        assertThat(bytes.hasKey(kind.keys.directory()).block(WAIT)).isFalse();
        // Held nine tenths of the interval: the instance that took it finds it free one interval later.
        assertThat(bytes.getExpire(kind.keys.restoreTurn()).block(WAIT))
                .isBetween(Duration.ofSeconds(50), Duration.ofSeconds(54));

        // The turn lapses with the interval (here: ended by hand), then the next instance to ask takes it.
        bytes.delete(kind.keys.restoreTurn()).block(WAIT);
        assertThat(another.apply(Duration.ofMinutes(1)).block(WAIT)).isEqualTo(1);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aSlotTheDirectoryLooksIntoTooLateIsBroughtForwardAndAnEarlierLookIsKept(Kind kind) {
        kind.queueWork(store, scope);
        String tag = RedisKeyspace.slotTag(scope.hash());
        long due = score(kind.keys.queueKey(scope.hash()), scope.hash());
        // A 'sooner' lost: the directory still says the slot's previous, later look.
        bytes.opsForZSet().add(kind.keys.directory(), utf8(tag), redisNow() + 3_600_000).block(WAIT);

        assertThat(kind.restoreNow().block(WAIT)).as("not lacking, only late").isZero();
        assertThat(score(kind.keys.directory(), tag)).isEqualTo(due);

        bytes.opsForZSet().add(kind.keys.directory(), utf8(tag), due - 5_000).block(WAIT);
        kind.restoreNow().block(WAIT);
        assertThat(score(kind.keys.directory(), tag)).as("an earlier look is never pushed back").isEqualTo(due - 5_000);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void restoringReadsEverySlotOfTheQueueAndLeavesEmptyOnesOut(Kind kind) {
        List<IdempotencyScope> scopes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            IdempotencyScope other = scope();
            kind.queueWork(store, other);
            scopes.add(other);
        }
        bytes.delete(kind.keys.directory()).block(WAIT);

        int distinctSlots = (int) scopes.stream().map(s -> RedisKeyspace.slotTag(s.hash())).distinct().count();
        assertThat(kind.restoreNow().block(WAIT)).isEqualTo(distinctSlots);
        assertThat(bytes.opsForZSet().size(kind.keys.directory()).block(WAIT)).isEqualTo(distinctSlots);
    }

    /**
     * Waits (bounded), on the Redis server's clock, until both the entry and its slot's look are due: a claim reads
     * the directory, whose look can be a millisecond after the entry (a lookup's slot is told to look 'sooner' after
     * the mark, rounded up to a millisecond).
     */
    private void awaitDue(Kind kind) {
        String queue = kind.keys.queueKey(scope.hash());
        String tag = RedisKeyspace.slotTag(scope.hash());
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (Math.max(score(queue, scope.hash()), score(kind.keys.directory(), tag)) >= redisNow()
                && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
    }

    private static IdempotencyScope scope() {
        return new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    private static long score(String key, String member) {
        return bytes.opsForZSet().score(key, utf8(member)).block(WAIT).longValue();
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static long redisNow() {
        return redis.nowMillis();
    }
}
