package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** The Lua scripts against a real Redis server: atomic reservation and owner-checked settling. */
class RedisIdempotencyStoreTest {
    static EmbeddedRedisServer server;
    static LettuceConnectionFactory connections;
    static RedisIdempotencyStore store;
    static ReactiveStringRedisTemplate strings;
    static final SettleSignals signals = new SettleSignals();

    static final Fingerprint FP = new Fingerprint("a".repeat(64));
    static final Fingerprint OTHER_FP = new Fingerprint("b".repeat(64));
    static final Duration LEASE = Duration.ofSeconds(30);
    static final Duration RETENTION = Duration.ofHours(24);

    @BeforeAll
    static void startRedis() {
        server = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        connections = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", server.port()));
        connections.afterPropertiesSet();
        connections.start();
        RedisSerializationContext<String, byte[]> context = RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray()).key(RedisSerializer.string())
                .hashKey(RedisSerializer.string()).build();
        store = new RedisIdempotencyStore(new ReactiveRedisTemplate<>(connections, context), signals, Clock.systemUTC());
        strings = new ReactiveStringRedisTemplate(connections);
    }

    @AfterAll
    static void stopRedis() {
        connections.destroy();
        server.stop();
    }

    static IdempotencyScope newScope() {
        return new IdempotencyScope("tenant", "route", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    static StoredResponse response(String body) {
        return new StoredResponse(202, List.of(new ResponseHeader("Retry-After", "3")),
                body.getBytes(StandardCharsets.UTF_8), false);
    }

    @Test
    void exactlyOneOfManyConcurrentReservationsWins() {
        IdempotencyScope scope = newScope();
        List<Reservation> outcomes = Flux.range(0, 200)
                .flatMap(i -> store.reserve(scope, FP, OwnerToken.random(), LEASE, false)
                        .subscribeOn(Schedulers.parallel()), 200)
                .collectList().block(Duration.ofSeconds(10));
        assertThat(outcomes).filteredOn(r -> r instanceof Reservation.Reserved).hasSize(1);
        assertThat(outcomes).filteredOn(r -> r instanceof Reservation.Taken taken
                && taken.existing().state() == RecordState.IN_FLIGHT).hasSize(199);
    }

    @Test
    void theReservationHoldsALeaseAndCompletionSetsRetention() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        store.reserve(scope, FP, owner, LEASE, false).block();
        assertThat(strings.getExpire(RedisIdempotencyStore.recordKey(scope)).block())
                .isBetween(LEASE.minusSeconds(2), LEASE);
        assertThat(store.complete(scope, owner, response("done"), RETENTION).block()).isTrue();
        assertThat(strings.getExpire(RedisIdempotencyStore.recordKey(scope)).block())
                .isBetween(RETENTION.minusSeconds(2), RETENTION);
    }

    @Test
    void aCompletedRecordReplaysOnlyForTheSameFingerprint() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        store.reserve(scope, FP, owner, LEASE, false).block();
        store.complete(scope, owner, response("done"), RETENTION).block();

        Reservation same = store.reserve(scope, FP, OwnerToken.random(), LEASE, false).block();
        assertThat(same).isInstanceOfSatisfying(Reservation.Taken.class, taken -> {
            assertThat(taken.existing().state()).isEqualTo(RecordState.COMPLETED);
            assertThat(taken.existing().response()).contains(response("done"));
        });
        Reservation other = store.reserve(scope, OTHER_FP, OwnerToken.random(), LEASE, false).block();
        assertThat(other).isInstanceOfSatisfying(Reservation.Taken.class, taken -> {
            assertThat(taken.existing().fingerprint()).isEqualTo(FP);
            assertThat(taken.existing().response()).as("never sent for another payload").isEmpty();
        });
    }

    @Test
    void aForeignOwnerCanNeitherCompleteNorReleaseAReservation() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        OwnerToken intruder = OwnerToken.random();
        store.reserve(scope, FP, owner, LEASE, false).block();

        assertThat(store.complete(scope, intruder, response("forged"), RETENTION).block()).isFalse();
        assertThat(store.release(scope, intruder).block()).isFalse();
        assertThat(store.reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .isInstanceOfSatisfying(Reservation.Taken.class,
                        taken -> assertThat(taken.existing().state()).isEqualTo(RecordState.IN_FLIGHT));

        assertThat(store.complete(scope, owner, response("genuine"), RETENTION).block()).isTrue();
        assertThat(((Reservation.Taken) store.reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().response()).contains(response("genuine"));
    }

    @Test
    void aLateWriterCannotOverwriteACompletedRecordNorFreeIt() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        store.reserve(scope, FP, owner, LEASE, false).block();
        store.complete(scope, owner, response("first"), RETENTION).block();

        // Even the former owner, arriving late (a duplicate completion), changes nothing.
        assertThat(store.complete(scope, owner, response("second"), RETENTION).block()).isFalse();
        assertThat(store.release(scope, owner).block()).isFalse();
        assertThat(((Reservation.Taken) store.reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().response()).contains(response("first"));
    }

    @Test
    void aLapsedLeaseCannotBeCompletedByItsFormerOwnerOnceSomeoneElseReserved() {
        IdempotencyScope scope = newScope();
        OwnerToken first = OwnerToken.random();
        store.reserve(scope, FP, first, Duration.ofMillis(50), false).block();
        Flux.interval(Duration.ofMillis(20)).concatMap(t -> strings.hasKey(RedisIdempotencyStore.recordKey(scope)))
                .filter(exists -> !exists).next().block(Duration.ofSeconds(5));
        OwnerToken second = OwnerToken.random();
        assertThat(store.reserve(scope, FP, second, LEASE, false).block()).isInstanceOf(Reservation.Reserved.class);

        assertThat(store.complete(scope, first, response("stale"), RETENTION).block()).isFalse();
        assertThat(store.complete(scope, second, response("fresh"), RETENTION).block()).isTrue();
    }

    @Test
    void releaseByTheOwnerFreesTheKey() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        store.reserve(scope, FP, owner, LEASE, false).block();
        assertThat(store.release(scope, owner).block()).isTrue();
        assertThat(store.reserve(scope, OTHER_FP, OwnerToken.random(), LEASE, false).block())
                .isInstanceOf(Reservation.Reserved.class);
    }

    @Test
    void completionWakesWaitersThroughRedisPubSub() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        SettleSignals remoteSignals = new SettleSignals();
        RedisSettleSubscription subscription = new RedisSettleSubscription(connections, remoteSignals);
        subscription.start();
        try {
            store.reserve(scope, FP, owner, LEASE, false).block();
            // A waiter on "another instance": only the pub/sub message can reach its signals.
            SettleWaiter waiter = remoteSignals.register(scope.hash());
            store.reserve(scope, FP, OwnerToken.random(), LEASE, true).block();
            Mono<Void> woken = waiter.settled().cache();
            woken.subscribe();
            subscription.subscribed().block(Duration.ofSeconds(10));
            store.complete(scope, owner, response("done"), RETENTION).block();
            woken.block(Duration.ofSeconds(5));
            waiter.close();
        } finally {
            subscription.stop();
        }
    }
}
