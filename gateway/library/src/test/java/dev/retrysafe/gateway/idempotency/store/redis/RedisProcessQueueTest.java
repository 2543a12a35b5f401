package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

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
 * The Redis side of the fleet's process queue that neither the store contract nor the fleet queues' contract
 * ({@link FleetQueueContractTest}) sees: the back-off kept in the record, the cost of a stored 202. On a real redis-server, flushed before each test.
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
        store = RedisStoreBuilder.on(redis.store(), RedisWakeUps.on(redis.connections(), new SettleSignals()))
                .firstProcessPoll(Duration.ofMillis(100)).build();
    }

    @Test
    void aStored202IsQueuedInItsRecordsSlotAndItsSlotIsLookedIntoSoon() {
        stored202("p-1");

        String pending = RedisKeyspace.PROCESSES.queueKey(scope.hash());
        assertThat(pending).isEqualTo("idempotency-processes:{" + RedisKeyspace.slotTag(scope.hash()) + "}");
        assertThat(score(pending, scope.hash())).as("due in 100 ms").isBetween(redisNow() - 1_000, redisNow() + 100);
        assertThat(score(RedisKeyspace.PROCESSES.directory(), RedisKeyspace.slotTag(scope.hash())))
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
            RedisIdempotencyStore countedStore = RedisStoreBuilder.on(StoreConnection.open(counted), wakeUps)
                    .firstProcessPoll(Duration.ofMillis(100)).build();
            IdempotencyScope first = new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));
            stored202(countedStore, first, "p-0");
            sent.clear();

            stored202(countedStore, scope, "p-1");
        } finally {
            counted.destroy();
        }

        assertThat(sent).as("Redis commands sent for one tracked 202").containsExactly("EVALSHA");
        assertThat(score(RedisKeyspace.PROCESSES.directory(), RedisKeyspace.slotTag(scope.hash())))
                .isBetween(redisNow() - 1_000, redisNow() + 100);
        assertThat(bytes.opsForValue().get(RedisKeyspace.processLinkKey("route", "p-1"))
                .map(RedisProcessQueueTest::utf8s).block(WAIT)).as("linked").isEqualTo(scope.hash());
        assertThat(bytes.getExpire(RedisKeyspace.processLinkKey("route", "p-1")).block(WAIT))
                .as("as long as the record").isBetween(Duration.ofDays(7).minusMinutes(1), Duration.ofDays(7));
    }

    @Test
    void aSlotWithoutPendingProcessesLeavesTheDirectory() {
        stored202("p-1");
        awaitDue();
        RedisProcessQueue queue = new RedisProcessQueue(redis::store, bytes, false);
        queue.pollDue(32, Duration.ofSeconds(15), Duration.ofSeconds(60),
                p -> Mono.just(new PollResult.Ended("COMPLETED", Duration.ofHours(1)))).block(WAIT);

        assertThat(bytes.opsForZSet().size(RedisKeyspace.PROCESSES.directory()).block(WAIT)).isZero();
        assertThat(bytes.opsForZSet().size(RedisKeyspace.PROCESSES.queueKey(scope.hash())).block(WAIT)).isZero();
        assertThat(field("process_state")).isEqualTo("ENDED");
    }

    @Test
    void eachAnswerThatItStillRunsDoublesTheDelayUpToTheLongest() {
        stored202("p-1");
        RedisProcessQueue queue = new RedisProcessQueue(redis::store, bytes, false);
        for (String expected : List.of("200", "400", "500", "500")) {
            awaitDue();
            assertThat(pollOwn(queue, Duration.ofMillis(500))).hasSize(1);
            assertThat(field("process_poll_delay")).isEqualTo(expected);
        }
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
        String pending = RedisKeyspace.PROCESSES.queueKey(scope.hash());
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
        return bytes.<String, byte[]>opsForHash().get(RedisKeyspace.recordKey(scope.hash()), name)
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
