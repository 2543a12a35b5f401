package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.LookupValues;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue.DueLookup;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.support.RedisClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.core.ReactiveRedisTemplate;

/**
 * The reconcile queue's directory is restored as the process queue's is: an UNCERTAIN record whose lookup was queued
 * in its slot, while the directory's own write was lost with a Redis master, is put back and looked up.
 */
class RedisReconcileQueueTest {
    static final Duration WAIT = Duration.ofSeconds(10);
    static final Duration CLAIM = Duration.ofSeconds(15);
    static RedisClient redis;
    static ReactiveRedisTemplate<String, byte[]> bytes;

    RedisIdempotencyStore store;
    RedisReconcileQueue queue;
    final IdempotencyScope scope = new IdempotencyScope("t", "orders", new IdempotencyKey(UUID.randomUUID().toString()));

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
        queue = new RedisReconcileQueue(bytes, 1024, EncryptionKeys.none(), RedisIdempotencyStore.RELEASED_OWNERS_TTL,
                false);
    }

    @Test
    void aSlotTheDirectoryLostIsPutBackAndItsLookupIsClaimed() {
        uncertainWithADueLookup();
        String tag = SlotTags.sameSlotAs(scope.hash());
        // The directory's write lost with its master (refused while it was down, or not replicated before a failover).
        bytes.delete(RedisReconcileQueue.DIRECTORY_KEY).block(WAIT);
        assertThat(claimOwn()).as("nothing says where to look").isEmpty();

        assertThat(queue.restoreLostSlots(Duration.ofMinutes(1)).block(WAIT)).isEqualTo(1);
        assertThat(bytes.opsForZSet().score(RedisReconcileQueue.DIRECTORY_KEY, utf8(tag)).block(WAIT)).isNotNull();
        assertThat(claimOwn()).extracting(DueLookup::values).containsExactly(Map.of("key", "order-1"));
    }

    @Test
    void theFleetRestoresOncePerInterval() {
        uncertainWithADueLookup();
        bytes.delete(RedisReconcileQueue.DIRECTORY_KEY).block(WAIT);
        RedisReconcileQueue another = new RedisReconcileQueue(bytes, 1024, EncryptionKeys.none(),
                RedisIdempotencyStore.RELEASED_OWNERS_TTL, false);

        assertThat(queue.restoreLostSlots(Duration.ofMinutes(1)).block(WAIT)).as("its turn").isEqualTo(1);
        bytes.delete(RedisReconcileQueue.DIRECTORY_KEY).block(WAIT);
        assertThat(another.restoreLostSlots(Duration.ofMinutes(1)).block(WAIT)).as("not its turn").isZero();
        bytes.delete(RedisReconcileQueue.RESTORE_TURN_KEY).block(WAIT);
        assertThat(another.restoreLostSlots(Duration.ofMinutes(1)).block(WAIT)).as("the next interval").isEqualTo(1);
    }

    /** Reserved with lookup values, then marked UNCERTAIN by its owner: its lookup is queued, due 1 ms later. */
    private void uncertainWithADueLookup() {
        OwnerToken owner = OwnerToken.random();
        store.reserve(new ReservationRequest(scope, Fingerprints.underNoRules(new Fingerprint("a".repeat(64))), owner,
                Duration.ofMinutes(1), Duration.ofHours(1), "http://upstream", false, false, "POST", "/orders",
                Optional.of(new LookupValues(Map.of("key", "order-1"), Duration.ofMillis(1))))).block(WAIT);
        store.markUncertain(scope, owner, "response timeout", Duration.ofHours(1)).block(WAIT);
        long due = bytes.opsForZSet().score(RedisReconcileQueue.queueKey(scope.hash()), utf8(scope.hash())).block(WAIT)
                .longValue();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (redis.nowMillis() <= due && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
    }

    private List<DueLookup> claimOwn() {
        return queue.claimDue(32, CLAIM).filter(due -> due.scopeHash().equals(scope.hash())).collectList().block(WAIT);
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
