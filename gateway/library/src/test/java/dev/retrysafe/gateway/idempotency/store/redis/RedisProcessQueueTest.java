package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue.DueProcess;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue.PollResult;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.support.RedisClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import reactor.core.publisher.Mono;

/**
 * The Redis side of the fleet's process queue that the store contract cannot see: the keys, the directory of slots,
 * the back-off kept in the record. On a real redis-server, flushed before each test.
 */
class RedisProcessQueueTest {
    static final Duration WAIT = Duration.ofSeconds(10);
    static RedisClient redis;
    static ReactiveRedisTemplate<String, byte[]> bytes;

    RedisIdempotencyStore store;
    final IdempotencyScope scope = new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));

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
        store = new RedisIdempotencyStore(redis.store(), RedisWakeUps.on(redis.connections(), new SettleSignals()),
                1024, EncryptionKeys.none(), Optional.empty(), Duration.ofMillis(100));
    }

    @Test
    void aStored202IsQueuedInItsRecordsSlotAndItsSlotIsLookedIntoSoon() {
        stored202("p-1");

        String pending = RedisProcessQueue.pendingKey(scope.hash());
        assertThat(pending).isEqualTo("idempotency-processes:{" + SlotTags.sameSlotAs(scope.hash()) + "}");
        assertThat(score(pending, scope.hash())).as("due in 100 ms").isBetween(redisNow() - 1_000, redisNow() + 100);
        assertThat(score(RedisProcessQueue.DIRECTORY_KEY, SlotTags.sameSlotAs(scope.hash())))
                .isBetween(redisNow() - 1_000, redisNow() + 100);
        assertThat(field("process_poll_delay")).isEqualTo("100");
    }

    @Test
    void aStored202NamingAProcessCostsOneRedisCallOnASingleRedis() {
        // The record, its queued poll, its process link and its slot in the directory: one script, as an untracked
        // 202 (they once took a look-soon before and after it, and a SET for the link: four calls).
        List<String> sent = new CopyOnWriteArrayList<>();
        LettuceConnectionFactory counted = redis.connectAgain();
        try {
            // Before its first connection is opened: Lettuce tells listeners of connections opened afterwards.
            counted.getNativeClient().addListener(new CommandListener() {
                @Override
                public void commandStarted(CommandStartedEvent event) {
                    sent.add(event.getCommand().getType().toString());
                }
            });
            RedisWakeUps wakeUps = RedisWakeUps.on(counted, new SettleSignals());
            // Its one INFO (the servers' version) asked now, not in the background during the measured call.
            wakeUps.channel().block(WAIT);
            RedisIdempotencyStore countedStore = new RedisIdempotencyStore(StoreConnection.open(counted), wakeUps,
                    1024, EncryptionKeys.none(), Optional.empty(), Duration.ofMillis(100));
            IdempotencyScope first = new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));
            stored202(countedStore, first, "p-0");
            sent.clear();

            stored202(countedStore, scope, "p-1");
        } finally {
            counted.destroy();
        }

        assertThat(sent).as("Redis commands sent for one tracked 202").containsExactly("EVALSHA");
        assertThat(score(RedisProcessQueue.DIRECTORY_KEY, SlotTags.sameSlotAs(scope.hash())))
                .isBetween(redisNow() - 1_000, redisNow() + 100);
        assertThat(bytes.opsForValue().get(RedisIdempotencyStore.processKey("route", "p-1"))
                .map(RedisProcessQueueTest::utf8s).block(WAIT)).as("linked").isEqualTo(scope.hash());
        assertThat(bytes.getExpire(RedisIdempotencyStore.processKey("route", "p-1")).block(WAIT))
                .as("as long as the record").isBetween(Duration.ofDays(7).minusMinutes(1), Duration.ofDays(7));
    }

    @Test
    void aSlotWithoutPendingProcessesLeavesTheDirectory() {
        stored202("p-1");
        awaitDue();
        RedisProcessQueue queue = new RedisProcessQueue(bytes);
        queue.pollDue(32, Duration.ofSeconds(15), Duration.ofSeconds(60),
                p -> Mono.just(new PollResult.Ended("COMPLETED", Duration.ofHours(1)))).block(WAIT);

        assertThat(bytes.opsForZSet().size(RedisProcessQueue.DIRECTORY_KEY).block(WAIT)).isZero();
        assertThat(bytes.opsForZSet().size(RedisProcessQueue.pendingKey(scope.hash())).block(WAIT)).isZero();
        assertThat(field("process_state")).isEqualTo("ENDED");
    }

    @Test
    void aSlotIsOnlyLookedIntoWhenTheDirectorySaysSo() {
        stored202("p-1");
        awaitDue();
        String tag = SlotTags.sameSlotAs(scope.hash());
        bytes.opsForZSet().add(RedisProcessQueue.DIRECTORY_KEY, utf8(tag), redisNow() + 3_600_000).block(WAIT);
        RedisProcessQueue queue = new RedisProcessQueue(bytes);
        assertThat(pollOwn(queue)).as("not its turn").isEmpty();

        bytes.opsForZSet().add(RedisProcessQueue.DIRECTORY_KEY, utf8(tag), redisNow()).block(WAIT);
        assertThat(pollOwn(queue)).extracting(DueProcess::processId).containsExactly("p-1");
    }

    @Test
    void eachAnswerThatItStillRunsDoublesTheDelayUpToTheLongest() {
        stored202("p-1");
        RedisProcessQueue queue = new RedisProcessQueue(bytes);
        for (String expected : List.of("200", "400", "500", "500")) {
            awaitDue();
            assertThat(pollOwn(queue, Duration.ofMillis(500))).hasSize(1);
            assertThat(field("process_poll_delay")).isEqualTo(expected);
        }
    }

    @Test
    void afterLookingIntoASlotTheDirectoryKeepsASoonerLookAskedForMeanwhile() {
        stored202("p-1");
        awaitDue();
        String tag = SlotTags.sameSlotAs(scope.hash());
        RedisProcessQueue queue = new RedisProcessQueue(bytes);
        List<Long> soonerAt = new CopyOnWriteArrayList<>();
        queue.pollDue(32, Duration.ofSeconds(15), Duration.ofSeconds(60), p -> {
            // Another 202 in the same slot is stored while this instance polls: it asks for a look in 50 ms.
            return RedisProcessQueue.lookSoon(redis.store(), scope.hash(), Duration.ofMillis(50))
                    .then(bytes.opsForZSet().score(RedisProcessQueue.DIRECTORY_KEY, utf8(tag)))
                    .doOnNext(score -> soonerAt.add(score.longValue()))
                    .thenReturn(PollResult.RUNNING);
        }).block(WAIT);

        assertThat(soonerAt).hasSize(1);
        assertThat(score(RedisProcessQueue.DIRECTORY_KEY, tag)).as("not pushed back after the poll")
                .isEqualTo(soonerAt.get(0));
    }

    @Test
    void aSlotTheDirectoryLostIsPutBackAtItsEarliestPollAndItsProcessIsPolledAgain() {
        stored202("p-1");
        awaitDue();
        String tag = SlotTags.sameSlotAs(scope.hash());
        String pending = RedisProcessQueue.pendingKey(scope.hash());
        // The directory's write lost with its master (refused while it was down, or not replicated before a failover).
        bytes.delete(RedisProcessQueue.DIRECTORY_KEY).block(WAIT);
        RedisProcessQueue queue = new RedisProcessQueue(bytes);
        assertThat(pollOwn(queue)).as("nothing says where to look").isEmpty();

        assertThat(queue.restoreLostSlotsNow().block(WAIT)).isEqualTo(1);
        assertThat(score(RedisProcessQueue.DIRECTORY_KEY, tag)).isEqualTo(score(pending, scope.hash()));
        assertThat(pollOwn(queue)).extracting(DueProcess::processId).containsExactly("p-1");
        assertThat(queue.restoreLostSlotsNow().block(WAIT)).as("nothing lost any more").isZero();
    }

    @Test
    void theFleetRestoresOncePerIntervalWhicheverInstanceTakesTheTurn() {
        stored202("p-1");
        RedisProcessQueue one = new RedisProcessQueue(bytes);
        RedisProcessQueue another = new RedisProcessQueue(bytes);
        bytes.delete(RedisProcessQueue.DIRECTORY_KEY).block(WAIT);

        assertThat(one.restoreLostSlots(Duration.ofMinutes(1)).block(WAIT)).as("its turn").isEqualTo(1);
        bytes.delete(RedisProcessQueue.DIRECTORY_KEY).block(WAIT);
        assertThat(another.restoreLostSlots(Duration.ofMinutes(1)).block(WAIT)).as("not its turn").isZero();
        assertThat(bytes.hasKey(RedisProcessQueue.DIRECTORY_KEY).block(WAIT)).isFalse();
        // Held nine tenths of the interval: the instance that took it finds it free one interval later.
        assertThat(bytes.getExpire(RedisProcessQueue.RESTORE_TURN_KEY).block(WAIT))
                .isBetween(Duration.ofSeconds(50), Duration.ofSeconds(54));

        // The turn lapses with the interval (here: ended by hand), then the next instance to ask takes it.
        bytes.delete(RedisProcessQueue.RESTORE_TURN_KEY).block(WAIT);
        assertThat(another.restoreLostSlots(Duration.ofMinutes(1)).block(WAIT)).isEqualTo(1);
    }

    @Test
    void aSlotTheDirectoryLooksIntoTooLateIsBroughtForwardAndAnEarlierLookIsKept() {
        stored202("p-1");
        awaitDue();
        String tag = SlotTags.sameSlotAs(scope.hash());
        long due = score(RedisProcessQueue.pendingKey(scope.hash()), scope.hash());
        // A 'sooner' lost: the directory still says the slot's previous, later look.
        bytes.opsForZSet().add(RedisProcessQueue.DIRECTORY_KEY, utf8(tag), redisNow() + 3_600_000).block(WAIT);
        RedisProcessQueue queue = new RedisProcessQueue(bytes);

        assertThat(queue.restoreLostSlotsNow().block(WAIT)).as("not lacking, only late").isZero();
        assertThat(score(RedisProcessQueue.DIRECTORY_KEY, tag)).isEqualTo(due);

        bytes.opsForZSet().add(RedisProcessQueue.DIRECTORY_KEY, utf8(tag), due - 5_000).block(WAIT);
        queue.restoreLostSlotsNow().block(WAIT);
        assertThat(score(RedisProcessQueue.DIRECTORY_KEY, tag)).as("an earlier look is never pushed back")
                .isEqualTo(due - 5_000);
    }

    @Test
    void restoringReadsEverySlotOfTheQueueAndLeavesEmptyOnesOut() {
        List<String> processes = List.of("p-1", "p-2", "p-3");
        List<IdempotencyScope> scopes = new ArrayList<>();
        for (String process : processes) {
            IdempotencyScope other = new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));
            stored202(other, process);
            scopes.add(other);
        }
        bytes.delete(RedisProcessQueue.DIRECTORY_KEY).block(WAIT);

        int distinctSlots = (int) scopes.stream().map(s -> SlotTags.sameSlotAs(s.hash())).distinct().count();
        assertThat(new RedisProcessQueue(bytes).restoreLostSlotsNow().block(WAIT)).isEqualTo(distinctSlots);
        assertThat(bytes.opsForZSet().size(RedisProcessQueue.DIRECTORY_KEY).block(WAIT)).isEqualTo(distinctSlots);
    }

    private List<DueProcess> pollOwn(RedisProcessQueue queue) {
        return pollOwn(queue, Duration.ofSeconds(60));
    }

    private List<DueProcess> pollOwn(RedisProcessQueue queue, Duration maxDelay) {
        List<DueProcess> asked = new CopyOnWriteArrayList<>();
        queue.pollDue(32, Duration.ofSeconds(15), maxDelay, p -> {
            if (p.scopeHash().equals(scope.hash())) {
                asked.add(p);
            }
            return Mono.just(PollResult.RUNNING);
        }).block(WAIT);
        return asked;
    }

    /** Waits (bounded) until the process's next poll is due on the Redis server's clock. */
    private void awaitDue() {
        String pending = RedisProcessQueue.pendingKey(scope.hash());
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (score(pending, scope.hash()) > redisNow() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
    }

    private void stored202(String processId) {
        stored202(scope, processId);
    }

    private void stored202(IdempotencyScope scope, String processId) {
        stored202(store, scope, processId);
    }

    private static void stored202(RedisIdempotencyStore store, IdempotencyScope scope, String processId) {
        StoredResponse accepted = new StoredResponse(202, List.of(),
                ("{\"processId\":\"" + processId + "\"}").getBytes(StandardCharsets.UTF_8), false);
        store.complete(new Completion(scope, OwnerToken.random(), Fingerprints.underNoRules(new Fingerprint("a".repeat(64))), "http://upstream",
                accepted, Duration.ofDays(7), Optional.of(processId))).block(WAIT);
    }

    private static String utf8s(byte[] value) {
        return new String(value, StandardCharsets.UTF_8);
    }

    private String field(String name) {
        return bytes.<String, byte[]>opsForHash().get(RedisIdempotencyStore.recordKey(scope.hash()), name)
                .map(b -> new String(b, StandardCharsets.UTF_8)).block(WAIT);
    }

    private static long score(String key, String member) {
        return bytes.opsForZSet().score(key, member.getBytes(StandardCharsets.UTF_8)).block(WAIT).longValue();
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static long redisNow() {
        return redis.nowMillis();
    }
}
