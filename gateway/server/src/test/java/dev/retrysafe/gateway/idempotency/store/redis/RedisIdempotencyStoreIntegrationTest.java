package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.CompletionResult;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.SettleResult;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.support.Marks;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
class RedisIdempotencyStoreIntegrationTest {
    static EmbeddedRedisServer server;
    static LettuceConnectionFactory connections;
    static RedisIdempotencyStore store;
    static RedisRecordInspector operator;
    static RedisIdempotencyStore sealingStore;
    static ReactiveRedisTemplate<String, byte[]> bytes;
    static StoreConnection storeConnection;
    static RedisWakeUps wakeUps;
    static ReactiveStringRedisTemplate strings;
    static final SettleSignals signals = new SettleSignals();

    static final Fingerprints FP = Fingerprints.underNoRules(new Fingerprint("a".repeat(64)));
    static final Fingerprints OTHER_FP = Fingerprints.underNoRules(new Fingerprint("b".repeat(64)));
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
        bytes = new ReactiveRedisTemplate<>(connections, context);
        wakeUps = RedisWakeUps.on(connections, signals);
        storeConnection = StoreConnection.open(connections);
        store = RedisStoreBuilder.plain(storeConnection, wakeUps);
        operator = new RedisRecordInspector(() -> storeConnection, bytes, wakeUps, EncryptionKeys.none(), false,
                RedisIdempotencyStore.RELEASED_OWNERS_TTL);
        String key = Base64.getEncoder().encodeToString(new byte[32]);
        sealingStore = RedisStoreBuilder.on(storeConnection, wakeUps)
                .sealedWith(EncryptionKeys.fromBase64(Map.of("k1", key), "k1")).build();
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

    static Mono<Reservation> reserve(IdempotencyScope scope, Fingerprints fp, OwnerToken owner, Duration lease,
            boolean wait) {
        return store.reserve(new ReservationRequest(scope, fp, owner, lease, RETENTION, "http://upstream", wait, false,
                "", "", Optional.empty()));
    }

    static Mono<Boolean> complete(IdempotencyScope scope, OwnerToken owner, StoredResponse response) {
        return completion(scope, owner, response).map(CompletionResult::stored);
    }

    static Mono<CompletionResult> completion(IdempotencyScope scope, OwnerToken owner, StoredResponse response) {
        return store.complete(new Completion(scope, owner, FP, "http://upstream", response, RETENTION, Optional.empty()));
    }

    static RecordState state(IdempotencyScope scope) {
        Reservation look = reserve(scope, FP, OwnerToken.random(), LEASE, false).block();
        return look instanceof Reservation.Taken taken ? taken.existing().state() : null;
    }

    static String field(IdempotencyScope scope, String field) {
        return strings.<String, String>opsForHash().get(RedisKeyspace.recordKey(scope), field).block();
    }

    static void awaitLeaseLapse(IdempotencyScope scope) {
        // Redis's own clock decides the lapse: poll (bounded) until its TIME passes lease_until.
        long leaseUntil = Long.parseLong(field(scope, "lease_until"));
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .concatMap(t -> strings.execute(c -> c.serverCommands().time()).next())
                .filter(now -> now > leaseUntil).next().block(Duration.ofSeconds(5));
    }

    @Test
    void exactlyOneOfManyConcurrentReservationsWins() {
        IdempotencyScope scope = newScope();
        List<Reservation> outcomes = Flux.range(0, 200)
                .flatMap(i -> reserve(scope, FP, OwnerToken.random(), LEASE, false)
                        .subscribeOn(Schedulers.parallel()), 200)
                .collectList().block(Duration.ofSeconds(10));
        assertThat(outcomes).filteredOn(r -> r instanceof Reservation.Reserved).hasSize(1);
        assertThat(outcomes).filteredOn(r -> r instanceof Reservation.Taken taken
                && taken.existing().state() == RecordState.IN_FLIGHT).hasSize(199);
    }

    @Test
    void anInFlightRecordOutlivesItsLeaseAndCompletionSetsRetention() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        assertThat(strings.getExpire(RedisKeyspace.recordKey(scope)).block())
                .isBetween(RETENTION.minusSeconds(2), RETENTION);
        assertThat(complete(scope, owner, response("done")).block()).isTrue();
        assertThat(strings.getExpire(RedisKeyspace.recordKey(scope)).block())
                .isBetween(RETENTION.minusSeconds(2), RETENTION);
        assertThat(field(scope, "status")).isEqualTo("202");
    }

    @Test
    void aCompletedRecordReplaysOnlyForTheSameFingerprint() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        complete(scope, owner, response("done")).block();

        Reservation same = reserve(scope, FP, OwnerToken.random(), LEASE, false).block();
        assertThat(same).isInstanceOfSatisfying(Reservation.Taken.class, taken -> {
            assertThat(taken.existing().state()).isEqualTo(RecordState.COMPLETED);
            assertThat(taken.existing().response()).contains(response("done"));
        });
        Reservation other = reserve(scope, OTHER_FP, OwnerToken.random(), LEASE, false).block();
        assertThat(other).isInstanceOfSatisfying(Reservation.Taken.class, taken -> {
            assertThat(taken.existing().fingerprints()).isEqualTo(FP);
            assertThat(taken.existing().response()).as("never sent for another payload").isEmpty();
        });
    }

    @Test
    void aForeignOwnerCanNeitherCompleteReleaseRenewNorMarkAReservation() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        OwnerToken intruder = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();

        assertThat(complete(scope, intruder, response("forged")).block()).isFalse();
        assertThat(store.release(scope, intruder).block()).isEqualTo(SettleResult.NOT_OWNER);
        assertThat(store.renew(scope, intruder, LEASE).block()).isFalse();
        assertThat(store.markUncertain(Marks.uncertain(scope, intruder, "forged", RETENTION)).block())
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(state(scope)).isEqualTo(RecordState.IN_FLIGHT);

        assertThat(complete(scope, owner, response("genuine")).block()).isTrue();
        assertThat(((Reservation.Taken) reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().response()).contains(response("genuine"));
    }

    @Test
    void aLateWriterCannotOverwriteACompletedRecordNorFreeIt() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        complete(scope, owner, response("first")).block();

        // Even the former owner, arriving late (a duplicate completion), changes nothing: it is told its result is
        // already stored (one owner token, one exchange, one result).
        assertThat(completion(scope, owner, response("second")).block()).isEqualTo(CompletionResult.ALREADY_STORED);
        assertThat(store.release(scope, owner).block()).isEqualTo(SettleResult.NOT_OWNER);
        assertThat(((Reservation.Taken) reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().response()).contains(response("first"));
    }

    /** A store call retried after a late answer: its first attempt had landed. */
    @Test
    void aRetriedCompletionRecognisesItsOwnEarlierWrite() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        assertThat(completion(scope, owner, response("done")).block()).isEqualTo(CompletionResult.STORED);
        String completedAt = field(scope, "completed_at");

        assertThat(completion(scope, owner, response("done")).block()).isEqualTo(CompletionResult.ALREADY_STORED);
        assertThat(field(scope, "completed_at")).as("nothing written twice").isEqualTo(completedAt);
        assertThat(state(scope)).isEqualTo(RecordState.COMPLETED);
    }

    /** Sealed anew for each call, the stored bytes differ; the retry is recognised by owner and request. */
    @Test
    void aRetriedCompletionIsRecognisedWhenStoredResponsesAreEncrypted() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        Completion completion = new Completion(scope, owner, FP, "http://upstream", response("sealed"), RETENTION,
                Optional.empty());
        assertThat(sealingStore.complete(completion).block()).isEqualTo(CompletionResult.STORED);
        assertThat(sealingStore.complete(completion).block()).isEqualTo(CompletionResult.ALREADY_STORED);
    }

    @Test
    void noSettleCallIsTheOwnersOnceAnOperatorCompletedTheRecord() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        assertThat(operator.complete(scope.hash(), response("reconciled"), RETENTION, "ops", "checked").block())
                .isEqualTo("IN_FLIGHT");

        assertThat(completion(scope, owner, response("late")).block()).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(store.markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block())
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(store.release(scope, owner).block()).isEqualTo(SettleResult.NOT_OWNER);
        assertThat(((Reservation.Taken) reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().response()).contains(response("reconciled"));
    }

    @Test
    void noSettleCallIsTheFormerOwnersOnceAnotherOwnerTookTheLapsedRecord() {
        IdempotencyScope scope = newScope();
        OwnerToken first = OwnerToken.random();
        reserve(scope, FP, first, Duration.ofMillis(50), false).block();
        awaitLeaseLapse(scope);
        OwnerToken second = OwnerToken.random();
        assertThat(store.reserve(new ReservationRequest(scope, FP, second, LEASE, RETENTION, "http://upstream",
                false, true, "", "", Optional.empty())).block()).isInstanceOf(Reservation.Reserved.class);

        assertThat(store.markUncertain(Marks.uncertain(scope, first, "response timeout", RETENTION)).block())
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(store.release(scope, first).block()).isEqualTo(SettleResult.NOT_OWNER);
        assertThat(completion(scope, second, response("second")).block()).isEqualTo(CompletionResult.STORED);
        assertThat(completion(scope, first, response("first")).block()).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(((Reservation.Taken) reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().response()).contains(response("second"));
    }

    @Test
    void aRetriedUncertainMarkRecognisesItsOwnEarlierWrite() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        assertThat(store.markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block())
                .isEqualTo(SettleResult.DONE);
        String uncertainAt = field(scope, "uncertain_at");

        assertThat(store.markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block())
                .isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(field(scope, "uncertain_at")).as("nothing written twice").isEqualTo(uncertainAt);
    }

    @Test
    void theOwnersMarkOfItsLapsedRecordWritesTheTrueReasonAndKeepsWhenItBecameUncertain() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, Duration.ofMillis(50), false).block();
        awaitLeaseLapse(scope);
        assertThat(state(scope)).isEqualTo(RecordState.UNCERTAIN);
        assertThat(field(scope, "uncertain_reason")).contains("lease lapsed");
        String uncertainAt = field(scope, "uncertain_at");

        assertThat(store.markUncertain(Marks.uncertain(scope, owner, "no response within the response timeout", RETENTION)).block())
                .isEqualTo(SettleResult.DONE);
        assertThat(field(scope, "uncertain_reason")).isEqualTo("no response within the response timeout");
        assertThat(field(scope, "uncertain_at")).isEqualTo(uncertainAt);
        assertThat(field(scope, "lease_until")).isNull();
    }

    @Test
    void aReserveSentAgainRenewsItsOwnLeaseAndCountsNoWaiter() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, Duration.ofMillis(300), true).block();
        long firstLease = Long.parseLong(field(scope, "lease_until"));

        assertThat(reserve(scope, FP, owner, LEASE, true).block()).isEqualTo(new Reservation.Reserved(owner));
        assertThat(Long.parseLong(field(scope, "lease_until"))).isGreaterThan(firstLease + 20_000);
        assertThat(field(scope, "waiters")).isNull();
        assertThat(field(scope, "attempts")).isEqualTo("1");
    }

    @Test
    void aRetriedReleaseRecognisesItsOwnEarlierReleaseEvenOnceTheKeyWasTakenAgain() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        assertThat(store.release(scope, owner).block()).isEqualTo(SettleResult.DONE);
        assertThat(store.release(scope, owner).block()).isEqualTo(SettleResult.ALREADY_DONE);

        OwnerToken next = OwnerToken.random();
        assertThat(reserve(scope, FP, next, LEASE, false).block()).isInstanceOf(Reservation.Reserved.class);
        assertThat(store.release(scope, owner).block()).isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(field(scope, "owner")).as("the next request's reservation is untouched").isEqualTo(next.value());
        assertThat(store.release(scope, OwnerToken.random()).block()).as("a stranger")
                .isEqualTo(SettleResult.NOT_OWNER);
    }

    @Test
    void aReleaseIsNotTheOwnersOnceAnOperatorReleasedTheRecord() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        assertThat(operator.release(scope.hash()).block()).isEqualTo("IN_FLIGHT");

        assertThat(store.release(scope, owner).block()).isEqualTo(SettleResult.NOT_OWNER);
    }

    @Test
    void theReleasedOwnersLiveInTheRecordsClusterSlotAndTheirLifeOnlyGrows() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        OwnerToken late = OwnerToken.random();
        String released = RedisKeyspace.releasedOwnersKey(scope.hash());
        assertThat(SlotHash.getSlot(released)).isEqualTo(SlotHash.getSlot(RedisKeyspace.recordKey(scope)));

        reserve(scope, FP, owner, LEASE, false).block();
        store.release(scope, owner).block();
        assertThat(strings.<String, String>opsForHash().entries(released).collectMap(Map.Entry::getKey,
                Map.Entry::getValue).block()).containsExactly(Map.entry(owner.value(), "released"));
        assertThat(strings.getExpire(released).block()).isBetween(Duration.ofSeconds(50), Duration.ofMinutes(1));

        RedisIdempotencyStore longerLease = new RedisIdempotencyStore(() -> storeConnection, wakeUps, 1024,
                EncryptionKeys.none(),
                Optional.empty(), Duration.ofSeconds(1), RedisIdempotencyStore.releasedOwnersTtl(Duration.ofMinutes(5)),
                Optional.empty());
        longerLease.release(scope, late).block();
        assertThat(strings.<String, String>opsForHash().get(released, late.value()).block()).isEqualTo("unheld");
        assertThat(strings.getExpire(released).block()).isBetween(Duration.ofMinutes(4), Duration.ofMinutes(5));
        store.release(scope, owner).block();
        assertThat(strings.getExpire(released).block()).as("never shortened")
                .isBetween(Duration.ofMinutes(4), Duration.ofMinutes(5));
        assertThat(strings.<String, String>opsForHash().get(released, owner.value()).block()).as("its first word stays")
                .isEqualTo("released");
    }

    @Test
    void anOperatorReleaseFencesTheFormerOwnerAsLongAsTheRecordWouldHaveLived() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        String released = RedisKeyspace.releasedOwnersKey(scope.hash());
        reserve(scope, FP, owner, LEASE, false).block();
        assertThat(operator.release(scope.hash()).block()).isEqualTo("IN_FLIGHT");

        assertThat(strings.<String, String>opsForHash().get(released, owner.value()).block()).isEqualTo("operator");
        assertThat(strings.getExpire(released).block()).as("the record's unsettled ttl")
                .isBetween(RETENTION.minusMinutes(1), RETENTION);

        IdempotencyScope shortLived = newScope();
        OwnerToken other = OwnerToken.random();
        store.reserve(new ReservationRequest(shortLived, FP, other, LEASE, Duration.ofSeconds(5), "http://upstream",
                false, false, "", "", Optional.empty())).block();
        operator.release(shortLived.hash()).block();
        assertThat(strings.getExpire(RedisKeyspace.releasedOwnersKey(shortLived.hash())).block())
                .as("at least the released owners' own life").isBetween(Duration.ofSeconds(50), Duration.ofMinutes(1));
    }

    @Test
    void aLapsedLeaseMakesTheRecordUncertainNotFree() {
        IdempotencyScope scope = newScope();
        OwnerToken first = OwnerToken.random();
        reserve(scope, FP, first, Duration.ofMillis(50), false).block();
        awaitLeaseLapse(scope);

        assertThat(reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .isInstanceOfSatisfying(Reservation.Taken.class,
                        taken -> assertThat(taken.existing().state()).isEqualTo(RecordState.UNCERTAIN));
        assertThat(field(scope, "uncertain_reason")).contains("lease lapsed");
        assertThat(store.renew(scope, first, LEASE).block()).as("a lapsed lease is not renewed").isFalse();
        // The original request's real answer, arriving late, settles the doubt.
        assertThat(complete(scope, first, response("late but real")).block()).isTrue();
        assertThat(state(scope)).isEqualTo(RecordState.COMPLETED);
    }

    @Test
    void renewingKeepsALiveRequestFromBeingTakenOver() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, Duration.ofMillis(300), false).block();
        long firstLease = Long.parseLong(field(scope, "lease_until"));
        assertThat(store.renew(scope, owner, Duration.ofSeconds(30)).block()).isTrue();
        assertThat(Long.parseLong(field(scope, "lease_until"))).isGreaterThan(firstLease + 20_000);
        assertThat(state(scope)).isEqualTo(RecordState.IN_FLIGHT);
    }

    @Test
    void anUncertainRecordIsRetakenOnlyWhenTheUpstreamHonoursTheKey() {
        IdempotencyScope scope = newScope();
        OwnerToken first = OwnerToken.random();
        reserve(scope, FP, first, LEASE, false).block();
        assertThat(store.markUncertain(Marks.uncertain(scope, first, "response timeout", RETENTION)).block())
                .isEqualTo(SettleResult.DONE);
        assertThat(state(scope)).isEqualTo(RecordState.UNCERTAIN);

        OwnerToken second = OwnerToken.random();
        Reservation retaken = store.reserve(new ReservationRequest(scope, FP, second, LEASE, RETENTION,
                "http://upstream", false, true, "", "", Optional.empty())).block();
        assertThat(retaken).isInstanceOf(Reservation.Reserved.class);
        assertThat(field(scope, "attempts")).isEqualTo("2");
        assertThat(complete(scope, first, response("stale")).block()).as("the former owner lost it").isFalse();
        assertThat(complete(scope, second, response("fresh")).block()).isTrue();
    }

    @Test
    void aRecordThatVanishedIsStoredAnew() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        strings.delete(RedisKeyspace.recordKey(scope)).block();

        assertThat(store.complete(new Completion(scope, owner, FP, "http://upstream", response("kept"), RETENTION,
                Optional.empty())).block()).isEqualTo(CompletionResult.RESTORED);
        assertThat(((Reservation.Taken) reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().response()).contains(response("kept"));
    }

    @Test
    void aLinkedProcessKeepsTheKeyUntilItEndsThenRetentionStarts() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        Duration hardCap = Duration.ofDays(7);
        reserve(scope, FP, owner, LEASE, false).block();
        store.complete(new Completion(scope, owner, FP, "http://upstream", response("accepted"), hardCap,
                Optional.of("p-1"))).block();
        assertThat(strings.getExpire(RedisKeyspace.recordKey(scope)).block())
                .isBetween(hardCap.minusSeconds(2), hardCap);
        assertThat(((Reservation.Taken) reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().processEnded()).isFalse();

        assertThat(store.processEnded(scope.routeId(), "p-1", "COMPLETED", Duration.ofHours(24)).block()).isTrue();
        assertThat(store.processEnded(scope.routeId(), "p-1", "COMPLETED", Duration.ofHours(24)).block())
                .as("ends once").isFalse();
        assertThat(strings.getExpire(RedisKeyspace.recordKey(scope)).block())
                .isBetween(Duration.ofHours(24).minusSeconds(2), Duration.ofHours(24));
        assertThat(((Reservation.Taken) reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().processEnded()).isTrue();
    }

    /**
     * Record sizes as Redis counts them (MEMORY USAGE), for docs/scaling.md's capacity section: with Redis's default
     * {@code hash-max-listpack-value} (64) the stored response makes the hash a hashtable; raised to 1024, it stays a
     * compact listpack.
     */
    @Test
    void recordsStaySmallInRedis() {
        long[] defaultEncoding = recordSizes();
        listpackValueLimit(1024);
        try {
            long[] listpack = recordSizes();
            System.out.printf("Record size in Redis: in flight %d bytes, completed Onboarding 202 %d bytes "
                    + "(hash-max-listpack-value 64); %d and %d bytes with hash-max-listpack-value 1024%n",
                    defaultEncoding[0], defaultEncoding[1], listpack[0], listpack[1]);
            assertThat(listpack[1]).isLessThan(defaultEncoding[1]).isLessThan(768);
        } finally {
            listpackValueLimit(64);
        }
        assertThat(defaultEncoding[0]).isLessThan(512);
        assertThat(defaultEncoding[1]).isLessThan(1408);
    }

    private static long[] recordSizes() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        long inFlight = Long.parseLong(memoryUsage(scope));
        StoredResponse onboarding202 = new StoredResponse(202, List.of(
                new ResponseHeader("Location", "/processes/9204b4dd-5d16-4708-9762-ec3d7d13ae3c"),
                new ResponseHeader("Retry-After", "1"), new ResponseHeader("Content-Type", "application/json")),
                "{\"processId\":\"9204b4dd-5d16-4708-9762-ec3d7d13ae3c\",\"status\":\"PENDING\"}"
                        .getBytes(StandardCharsets.UTF_8), false);
        complete(scope, owner, onboarding202).block();
        return new long[] {inFlight, Long.parseLong(memoryUsage(scope))};
    }

    static String memoryUsage(IdempotencyScope scope) {
        return String.valueOf(strings.execute(org.springframework.data.redis.core.script.RedisScript.of(
                        "return redis.call('MEMORY', 'USAGE', KEYS[1], 'SAMPLES', '0')", Long.class),
                List.of(RedisKeyspace.recordKey(scope))).next().block());
    }

    static void listpackValueLimit(int bytes) {
        try (var connection = connections.getConnection()) {
            connection.serverCommands().setConfig("hash-max-ziplist-value", Integer.toString(bytes));
        }
    }

    @Test
    void largeCompressibleBodiesAreStoredCompressed() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        byte[] body = "{\"site\":\"https://a.example\",\"status\":\"PENDING\"}".repeat(3000)
                .getBytes(StandardCharsets.UTF_8);
        reserve(scope, FP, owner, LEASE, false).block();
        complete(scope, owner, new StoredResponse(200, List.of(), body, false)).block();
        Long stored = strings.<String, String>opsForHash().size(RedisKeyspace.recordKey(scope)).block();
        long responseBytes = strings.execute(c -> c.hashCommands().hStrLen(
                java.nio.ByteBuffer.wrap(RedisKeyspace.recordKey(scope).getBytes(StandardCharsets.UTF_8)),
                java.nio.ByteBuffer.wrap("response".getBytes(StandardCharsets.UTF_8)))).next().block();
        assertThat(stored).isPositive();
        assertThat(responseBytes).isLessThan(body.length / 10);
        assertThat(((Reservation.Taken) reserve(scope, FP, OwnerToken.random(), LEASE, false).block())
                .existing().response().orElseThrow().body()).isEqualTo(body);
    }

    @Test
    void releaseByTheOwnerFreesTheKey() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        reserve(scope, FP, owner, LEASE, false).block();
        assertThat(store.release(scope, owner).block()).isEqualTo(SettleResult.DONE);
        assertThat(reserve(scope, OTHER_FP, OwnerToken.random(), LEASE, false).block())
                .isInstanceOf(Reservation.Reserved.class);
    }

    @Test
    void completionWakesWaitersThroughRedisPubSub() {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        RedisWakeUps remote = RedisWakeUps.on(connections, new SettleSignals());
        remote.start();
        try {
            remote.channel().block(Duration.ofSeconds(10));
            reserve(scope, FP, owner, LEASE, false).block();
            // A waiter on "another instance": only the pub/sub message can reach its signals.
            SettleWaiter waiter = remote.register(scope.hash());
            waiter.listening().block(Duration.ofSeconds(10));
            reserve(scope, FP, OwnerToken.random(), LEASE, true).block();
            Mono<Void> woken = waiter.settled().cache();
            woken.subscribe();
            complete(scope, owner, response("done")).block();
            woken.block(Duration.ofSeconds(5));
            waiter.close();
        } finally {
            remote.stop();
        }
    }
}
