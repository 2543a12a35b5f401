package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.RedisFaultProxy;
import dev.retrysafe.gateway.support.RestartableRedis;
import io.lettuce.core.ClientOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The near cache's bound through an unreliable network: instance A (near cache on) reaches Redis through the fault
 * proxy, instance B directly. Each round keeps a record near on A, starts a random fault on A's link (replies
 * delayed past the bound, a stall, a half-open link, a reset, or Redis killed and restarted empty), changes the record
 * behind A's back (B ends its process; the restart forgets it), and then asks A until it answers the change. Every
 * answer A gives to a reserve it started more than max-staleness after the change must be the changed record, whatever
 * the fault did to the pushes and fences on the way. The seed is printed; {@code -Dnear-cache.seed=N} replays it.
 */
class NearCacheFaultProxyIntegrationTest {
    static final Duration STALENESS = Duration.ofMillis(300);
    static final Duration WAIT = Duration.ofSeconds(60);
    static final Fingerprints FP = Fingerprints.underNoRules(new Fingerprint("c".repeat(64)));
    static final int ROUNDS = 12;
    RestartableRedis redis;
    RedisFaultProxy proxy;
    LettuceConnectionFactory factoryA;
    LettuceConnectionFactory factoryB;
    NearCache cache;
    RedisIdempotencyStore a;
    RedisIdempotencyStore b;

    @BeforeEach
    void start() throws Exception {
        assumeTrue(LocalRedisCluster.onPath("redis-server"), "needs redis-server on the PATH");
        redis = RestartableRedis.forgetting();
        proxy = new RedisFaultProxy(redis.port());
        factoryA = factory(proxy.port());
        factoryB = factory(redis.port());
        cache = new NearCache(factoryA, 1000, 16L << 20, STALENESS);
        cache.start();
        a = store(factoryA, Optional.of(cache));
        b = store(factoryB, Optional.empty());
    }

    @AfterEach
    void stop() {
        if (cache != null) {
            cache.close();
        }
        for (LettuceConnectionFactory factory : new LettuceConnectionFactory[] {factoryA, factoryB}) {
            if (factory != null) {
                factory.destroy();
            }
        }
        if (proxy != null) {
            proxy.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void everyAnswerPastTheBoundAfterAChangeIsTheChangedRecordWhateverTheLinkDoes() throws Exception {
        long seed = Long.getLong("near-cache.seed", System.nanoTime());
        System.out.println("NearCacheFaultProxyIntegrationTest seed=" + seed + " (-Dnear-cache.seed=" + seed + ")");
        Random random = new Random(seed);
        int servedNear = 0;
        for (int round = 0; round < ROUNDS; round++) {
            String processId = "p-" + UUID.randomUUID();
            IdempotencyScope scope = completedOnB(processId);
            awaitUntil("seed " + seed + " round " + round + ": A keeps the record near", () -> {
                replayOnA(scope);
                return cache.serving() && cache.replay(RedisKeyspace.recordKey(scope), FP).isPresent();
            });
            servedNear++;
            int fault = random.nextInt(6);
            Duration window = Duration.ofMillis(200 + random.nextInt(1200));
            long changedAt;
            Predicate<Reservation> changed;
            switch (fault) {
                case 0 -> proxy.delayReplies(STALENESS.multipliedBy(2 + random.nextInt(4)), window);
                case 1 -> proxy.stall(window);
                case 2 -> proxy.halfOpen(window);
                case 3 -> proxy.resetAll(random.nextBoolean());
                default -> {
                    // no fault on A's link: the change alone
                }
            }
            if (fault == 4 && random.nextBoolean()) {
                redis.killAndForget();
                changedAt = System.nanoTime();
                redis.start();
                changed = reply -> reply instanceof Reservation.Reserved;
            } else {
                awaitUntil("seed " + seed + " round " + round + ": B ends the process", () -> {
                    try {
                        return Boolean.TRUE.equals(b.processEnded(scope.operation(), processId, "COMPLETED",
                                Duration.ofHours(24)).block(Duration.ofSeconds(5)));
                    } catch (RuntimeException reconnecting) {
                        return false;
                    }
                });
                changedAt = System.nanoTime();
                changed = reply -> reply instanceof Reservation.Taken taken && taken.existing().processEnded();
            }
            seenWithinTheBound(seed, round, fault, scope, changedAt, changed);
            proxy.heal();
        }
        assertThat(servedNear).isEqualTo(ROUNDS);
    }

    private void seenWithinTheBound(long seed, int round, int fault, IdempotencyScope scope, long changedAt,
            Predicate<Reservation> changed) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            long started = System.nanoTime();
            Reservation reply;
            try {
                reply = a.reserve(request(scope, OwnerToken.random())).block(Duration.ofSeconds(5));
            } catch (RuntimeException failedOnTheWay) {
                continue;
            }
            if (changed.test(reply)) {
                return;
            }
            if (started - changedAt > STALENESS.toNanos()) {
                fail("seed %d round %d fault %d: A answered %s to a reserve started %d ms after the change, past the "
                        + "%s bound", seed, round, fault, reply, (started - changedAt) / 1_000_000, STALENESS);
            }
            LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
        }
        fail("seed %d round %d fault %d: A never saw the change", seed, round, fault);
    }

    private void replayOnA(IdempotencyScope scope) {
        try {
            a.reserve(request(scope, OwnerToken.random())).block(Duration.ofSeconds(5));
        } catch (RuntimeException reconnecting) {
            // the link is recovering from the round before: asked again
        }
    }

    private IdempotencyScope completedOnB(String processId) {
        IdempotencyScope scope = new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));
        OwnerToken owner = OwnerToken.random();
        awaitUntil("B reserves", () -> {
            try {
                return b.reserve(request(scope, owner)).block(Duration.ofSeconds(5)) instanceof Reservation.Reserved;
            } catch (RuntimeException reconnecting) {
                return false;
            }
        });
        StoredResponse response = new StoredResponse(202, List.of(),
                ("{\"processId\":\"" + processId + "\"}").getBytes(StandardCharsets.UTF_8), false);
        assertThat(b.complete(new Completion(scope, owner, FP, "http://upstream", response, Duration.ofHours(1),
                Optional.of(processId))).block(WAIT).stored()).isTrue();
        return scope;
    }

    private static ReservationRequest request(IdempotencyScope scope, OwnerToken owner) {
        return new ReservationRequest(scope, FP, owner, Duration.ofSeconds(30), Duration.ofHours(1),
                "http://upstream", false, false, "POST", "/x", Optional.empty());
    }

    private static LettuceConnectionFactory factory(int port) {
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration("127.0.0.1", port), LettuceClientConfiguration.builder()
                        .clientOptions(ClientOptions.builder()
                                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                                .publishOnScheduler(true)
                                .build())
                        .commandTimeout(Duration.ofSeconds(2))
                        .build());
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    private static RedisIdempotencyStore store(LettuceConnectionFactory factory, Optional<NearCache> nearCache) {
        StoreConnection connection = StoreConnection.open(factory);
        return new RedisIdempotencyStore(() -> connection,
                RedisWakeUps.on(factory, new SettleSignals(), WakeUpChannel.CLASSIC), 1024, EncryptionKeys.none(),
                Optional.empty(), Duration.ofSeconds(1), RedisIdempotencyStore.RELEASED_OWNERS_TTL, nearCache);
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
