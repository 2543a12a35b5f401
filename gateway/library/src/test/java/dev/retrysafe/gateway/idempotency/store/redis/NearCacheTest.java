package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.RedisStoreContractFixture;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.UncertainMark;
import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.protocol.ProtocolVersion;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The near cache on a real redis-server, two gateway instances (A with the cache, B without) on one Redis: replays
 * answered with no command sent once kept, and every change of the record made elsewhere (a process end, a flush, an
 * expiry, a lost connection) seen by A within max-staleness. "Within" is checked, not timed: every answer A gives to a
 * reserve it started more than max-staleness after the change landed must be the changed record.
 */
class NearCacheTest {
    static final Duration WAIT = Duration.ofSeconds(30);
    static final Duration STALENESS = Duration.ofMillis(400);
    static final Fingerprints FP = Fingerprints.underNoRules(new Fingerprint("a".repeat(64)));
    static RedisProcess redis;
    static RedisClient admin;
    static StatefulRedisConnection<String, String> adminConnection;
    LettuceConnectionFactory factoryA;
    LettuceConnectionFactory factoryB;
    NearCache cache;
    RedisIdempotencyStore a;
    RedisIdempotencyStore b;
    RedisRecordInspector operatorB;

    @BeforeAll
    static void startRedis() {
        redis = RedisProcess.start();
        admin = RedisClient.create("redis://127.0.0.1:" + redis.port());
        adminConnection = admin.connect();
    }

    @AfterAll
    static void stopRedis() {
        adminConnection.close();
        admin.shutdown();
        redis.close();
    }

    @BeforeEach
    void twoInstances() {
        factoryA = redis.connect(RedisStoreContractFixture.AS_THE_GATEWAY);
        factoryB = redis.connect(RedisStoreContractFixture.AS_THE_GATEWAY);
        cache = new NearCache(factoryA, 1000, 16L << 20, STALENESS);
        cache.start();
        a = storeOn(factoryA, Optional.of(cache));
        StoreConnection connectionB = StoreConnection.open(factoryB);
        b = RedisStoreBuilder.on(connectionB, wakeUps(factoryB)).build();
        operatorB = new RedisRecordInspector(() -> connectionB, RedisProcess.bytesTemplate(factoryB), wakeUps(factoryB),
                EncryptionKeys.none(), false, RedisIdempotencyStore.RELEASED_OWNERS_TTL);
        awaitUntil("A's near cache serves", cache::serving);
    }

    @AfterEach
    void stopInstances() {
        cache.close();
        factoryA.destroy();
        factoryB.destroy();
    }

    @Test
    void replaysAfterTheFirstSendNothingToRedis() {
        IdempotencyScope scope = completed(b, Duration.ofHours(1), Optional.empty());
        assertThat(replay(a, scope)).as("the first replay, from Redis").isNotNull();
        awaitUntil("A keeps the record", () -> cache.size() == 1);
        long scripts = calls("evalsha") + calls("eval");
        long reads = calls("hmget") + calls("pttl") + calls("get");
        for (int i = 0; i < 20; i++) {
            assertThat(replay(a, scope).response()).isPresent();
        }
        assertThat(calls("evalsha") + calls("eval")).as("no script for a replay kept near").isEqualTo(scripts);
        assertThat(calls("hmget") + calls("pttl") + calls("get")).as("nor a read").isEqualTo(reads);
        assertThat(a.reserve(request(scope, Fingerprints.underNoRules(new Fingerprint("b".repeat(64)))))
                .block(WAIT)).as("another intent is judged by Redis")
                .isInstanceOfSatisfying(Reservation.Taken.class, t -> assertThat(t.existing().response()).isEmpty());
        assertThat(calls("evalsha") + calls("eval")).isEqualTo(scripts + 1);
    }

    @Test
    void aProcessEndedOnAnotherInstanceIsSeenWithinTheBound() {
        String processId = "p-" + UUID.randomUUID();
        IdempotencyScope scope = completed(b, Duration.ofHours(1), Optional.of(processId));
        keptNear(scope);
        assertThat(replay(a, scope).processEnded()).isFalse();
        assertThat(b.processEnded(scope.operation(), processId, "COMPLETED", Duration.ofHours(24)).block(WAIT))
                .isTrue();
        long changed = System.nanoTime();
        seenWithinTheBound(changed, () -> a.reserve(request(scope, FP)).block(WAIT),
                r -> r instanceof Reservation.Taken t && t.existing().processEnded());
    }

    @Test
    void aFlushIsSeenWithinTheBound() {
        IdempotencyScope scope = completed(b, Duration.ofHours(1), Optional.empty());
        keptNear(scope);
        adminConnection.sync().flushall();
        long changed = System.nanoTime();
        seenWithinTheBound(changed, () -> a.reserve(request(scope, FP)).block(WAIT),
                r -> r instanceof Reservation.Reserved);
    }

    @Test
    void anExpiredRecordIsNeverReplayed() {
        IdempotencyScope scope = completed(b, Duration.ofMillis(1500), Optional.empty());
        keptNear(scope);
        String key = RedisKeyspace.recordKey(scope);
        awaitUntil("the record expires in Redis", () -> adminConnection.sync().exists(key) == 0);
        assertThat(a.reserve(request(scope, FP)).block(WAIT)).isInstanceOf(Reservation.Reserved.class);
    }

    @Test
    void unsettledRecordsAreNeverKeptSoAnOperatorsReleaseOrCompletionIsSeenAtOnce() {
        IdempotencyScope scope = scope();
        OwnerToken owner = OwnerToken.random();
        assertThat(b.reserve(request(scope, FP, owner)).block(WAIT)).isInstanceOf(Reservation.Reserved.class);
        assertThat(b.markUncertain(new UncertainMark(scope, owner, "test", Duration.ofHours(1), FP,
                "http://upstream", Optional.empty())).block(WAIT)).isNotNull();
        for (int i = 0; i < 3; i++) {
            assertThat(a.reserve(request(scope, FP)).block(WAIT)).isInstanceOfSatisfying(Reservation.Taken.class,
                    t -> assertThat(t.existing().state()).isEqualTo(RecordState.UNCERTAIN));
        }
        StoredResponse settled = new StoredResponse(201, List.of(), "{\"settled\":true}".getBytes(
                StandardCharsets.UTF_8), false);
        operatorB.complete(scope.hash(), settled, Duration.ofHours(1), "operator", "checked upstream").block(WAIT);
        assertThat(replay(a, scope).response()).contains(settled);
        keptNear(scope);
        assertThat(operatorB.release(scope.hash()).block(WAIT)).as("a completed record is not freed")
                .isEqualTo("COMPLETED");
        assertThat(replay(a, scope).response()).contains(settled);

        IdempotencyScope inFlight = scope();
        assertThat(b.reserve(request(inFlight, FP)).block(WAIT)).isInstanceOf(Reservation.Reserved.class);
        assertThat(a.reserve(request(inFlight, FP)).block(WAIT)).isInstanceOf(Reservation.Taken.class);
        operatorB.release(inFlight.hash()).block(WAIT);
        assertThat(a.reserve(request(inFlight, FP)).block(WAIT)).isInstanceOf(Reservation.Reserved.class);
    }

    @Test
    void droppedConnectionsStopServingUntilTrackingIsBackAndAChangeMeanwhileIsSeen() {
        String processId = "p-" + UUID.randomUUID();
        IdempotencyScope scope = completed(b, Duration.ofHours(1), Optional.of(processId));
        keptNear(scope);
        adminConnection.sync().clientKill(io.lettuce.core.KillArgs.Builder.typeNormal().skipme());
        // B's store connection was dropped too: Lettuce reconnects it, and the end is told once it is back.
        awaitUntil("B reconnected and ended the process", () -> {
            try {
                return b.processEnded(scope.operation(), processId, "COMPLETED", Duration.ofHours(24))
                        .block(Duration.ofSeconds(5));
            } catch (RuntimeException notYet) {
                return false;
            }
        });
        long changed = System.nanoTime();
        seenWithinTheBound(changed, () -> {
            try {
                return a.reserve(request(scope, FP)).block(Duration.ofSeconds(5));
            } catch (RuntimeException reconnecting) {
                return null;
            }
        }, r -> r instanceof Reservation.Taken t && t.existing().processEnded());
        awaitUntil("A's near cache serves again", cache::serving);
        keptNear(scope);
        assertThat(replay(a, scope).processEnded()).isTrue();
    }

    @Test
    void aRedisThatDoesNotPushInvalidationsIsRefusedAndEveryReplayGoesToIt() {
        LettuceConnectionFactory resp2 = redis.connect(LettuceClientConfiguration.builder()
                .clientOptions(RedisStoreContractFixture.AS_THE_GATEWAY.getClientOptions().orElseThrow().mutate()
                        .protocolVersion(ProtocolVersion.RESP2).build())
                .build());
        NearCache refused = new NearCache(resp2, 1000, 16L << 20, STALENESS);
        try {
            refused.start();
            awaitUntil("the RESP2 connection is refused", refused::refused);
            RedisIdempotencyStore onResp2 = storeOn(resp2, Optional.of(refused));
            IdempotencyScope scope = completed(b, Duration.ofHours(1), Optional.empty());
            long scripts = calls("evalsha");
            for (int i = 0; i < 5; i++) {
                assertThat(replay(onResp2, scope).response()).isPresent();
            }
            assertThat(calls("evalsha")).isEqualTo(scripts + 5);
            assertThat(refused.serving()).isFalse();
            assertThat(refused.size()).isZero();
        } finally {
            refused.close();
            resp2.destroy();
        }
    }

    /**
     * Polls {@code answer} until it is {@code changed}; an answer that is not, to a call started more than
     * max-staleness after {@code changedAt}, breaks the bound. A null answer (a call that failed) is asked again.
     */
    private static void seenWithinTheBound(long changedAt, java.util.function.Supplier<Reservation> answer,
            Predicate<Reservation> changed) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            long started = System.nanoTime();
            Reservation reply = answer.get();
            if (reply != null && changed.test(reply)) {
                return;
            }
            if (reply != null && started - changedAt > STALENESS.toNanos()) {
                fail("A answered %s %d ms after the change, past the %s bound", reply,
                        (started - changedAt) / 1_000_000, STALENESS);
            }
            LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
        }
        fail("the change was never seen");
    }

    /** A replay on A, from Redis or its near copy, until A keeps the record near. */
    private void keptNear(IdempotencyScope scope) {
        awaitUntil("A keeps the record near", () -> {
            replay(a, scope);
            return cache.size() > 0 && cache.replay(RedisKeyspace.recordKey(scope), FP).isPresent();
        });
    }

    private static dev.retrysafe.gateway.idempotency.record.IdempotencyRecord replay(IdempotencyStore store,
            IdempotencyScope scope) {
        Reservation reply = store.reserve(request(scope, FP)).block(WAIT);
        assertThat(reply).isInstanceOf(Reservation.Taken.class);
        return ((Reservation.Taken) reply).existing();
    }

    private static IdempotencyScope completed(IdempotencyStore store, Duration ttl, Optional<String> processId) {
        IdempotencyScope scope = scope();
        OwnerToken owner = OwnerToken.random();
        assertThat(store.reserve(request(scope, FP, owner)).block(WAIT)).isInstanceOf(Reservation.Reserved.class);
        StoredResponse response = new StoredResponse(202, List.of(),
                ("{\"processId\":\"" + processId.orElse("none") + "\"}").getBytes(StandardCharsets.UTF_8), false);
        assertThat(store.complete(new Completion(scope, owner, FP, "http://upstream", response, ttl, processId))
                .block(WAIT).stored()).isTrue();
        return scope;
    }

    private static RedisIdempotencyStore storeOn(LettuceConnectionFactory factory, Optional<NearCache> nearCache) {
        StoreConnection connection = StoreConnection.open(factory);
        RedisStoreBuilder builder = RedisStoreBuilder.on(connection, wakeUps(factory));
        nearCache.ifPresent(builder::nearCache);
        return builder.build();
    }

    private static RedisWakeUps wakeUps(LettuceConnectionFactory factory) {
        return RedisWakeUps.on(factory, new SettleSignals(), WakeUpChannel.CLASSIC);
    }

    private static IdempotencyScope scope() {
        return new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    private static ReservationRequest request(IdempotencyScope scope, Fingerprints fingerprints) {
        return request(scope, fingerprints, OwnerToken.random());
    }

    private static ReservationRequest request(IdempotencyScope scope, Fingerprints fingerprints, OwnerToken owner) {
        return new ReservationRequest(scope, fingerprints, owner, Duration.ofSeconds(30), Duration.ofHours(1),
                "http://upstream", false, false, "POST", "/x", Optional.empty());
    }

    /** Calls of a command so far, from INFO commandstats. */
    private static long calls(String command) {
        Matcher calls = Pattern.compile("cmdstat_" + command + ":calls=(\\d+)")
                .matcher(adminConnection.sync().info("commandstats"));
        return calls.find() ? Long.parseLong(calls.group(1)) : 0;
    }

    private static void awaitUntil(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("Not within " + WAIT + ": " + what);
            }
            LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
        }
    }
}
