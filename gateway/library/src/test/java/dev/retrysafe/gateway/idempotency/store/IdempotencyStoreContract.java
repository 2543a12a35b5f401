package dev.retrysafe.gateway.idempotency.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.CompletionResult;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.SettleResult;
import dev.retrysafe.gateway.idempotency.support.Marks;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * What every {@link IdempotencyStore} does, whatever it runs on: run once against the Redis store (the Lua scripts
 * on a real redis-server) and once against the in-memory store the unit tests use, so that the fake cannot drift
 * from the real thing unnoticed. Everything is observed through the interface only.
 * <p>
 * Time is the subclass's business: {@link #letPass} advances a clock in memory and waits for the Redis server's
 * TIME with Redis. Tests never need anything to happen <em>before</em> a short lease or lifetime ends (a lease that
 * must hold is {@link #LEASE}, half a minute), so a slow machine makes the Redis run slower, never wrong.
 */
public abstract class IdempotencyStoreContract {
    static final Fingerprints FP = Fingerprints.underNoRules(new Fingerprint("a".repeat(64)));
    static final Fingerprints OTHER_FP = Fingerprints.underNoRules(new Fingerprint("b".repeat(64)));
    static final String UPSTREAM = "http://upstream";
    /** A lease that holds for the whole test. */
    static final Duration LEASE = Duration.ofSeconds(30);
    static final Duration RETENTION = Duration.ofHours(24);
    /** A lease or lifetime a test lets end: real milliseconds on Redis, one clock step in memory. */
    static final Duration SHORT = Duration.ofMillis(100);
    static final Duration WAIT = Duration.ofSeconds(5);
    /** A claim that must hold while the test looks (it does within milliseconds), then is let lapse. */
    static final Duration CLAIM = Duration.ofSeconds(2);

    /** A fresh key for each test: the Redis store is shared by all of them. */
    final IdempotencyScope scope = newScope();

    /** The store under test, the same for every call within a test. */
    protected abstract IdempotencyStore store();

    /**
     * The fleet's queue of pending processes the store fills with each 202 naming one; its first poll is due
     * {@link #SHORT} after the 202.
     */
    protected abstract ProcessQueue processes();

    /** The fleet's UNCERTAIN records to look up at their upstream, which the store fills. */
    protected abstract ReconcileQueue lookups();

    /** Lets at least {@code time} pass on the clock the store's deadlines are read from. */
    protected abstract void letPass(Duration time);

    /**
     * Returns once every wake-up the store has sent so far has reached this instance's waiters, so that a waiter
     * that has not fired by then was not woken (Redis delivers lease-lapse wake-ups through pub/sub only).
     */
    protected abstract void deliverWakeUps();

    /**
     * An operator frees the scope's IN_FLIGHT or UNCERTAIN record, as the operator endpoint does; returns the state it
     * was in, or {@code ABSENT}.
     */
    protected abstract String releaseByOperator(IdempotencyScope scope);

    // ---- reserve

    @Test
    void aFreeKeyIsReservedForTheCallerAndThenTakenInFlight() {
        OwnerToken owner = OwnerToken.random();
        assertThat(reserve(FP, owner)).isEqualTo(new Reservation.Reserved(owner));

        IdempotencyRecord seen = taken(reserve(FP, OwnerToken.random()));
        assertThat(seen).isEqualTo(new IdempotencyRecord(RecordState.IN_FLIGHT, FP, Optional.empty(), false));
    }

    @Test
    void aReserveSentAgainThatFindsItsOwnReservationIsReservedWithAFreshLease() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lease(SHORT));

        assertThat(reserve(request(FP, owner).willWait())).as("its own reservation, not one to wait for")
                .isEqualTo(new Reservation.Reserved(owner));
        letMoreThan(SHORT);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).as("the lease is the second attempt's")
                .isEqualTo(RecordState.IN_FLIGHT);
        assertThat(store().renew(scope, owner, LEASE).block(WAIT)).isTrue();
        assertThat(complete(owner, response("done"))).isEqualTo(CompletionResult.STORED);
    }

    @Test
    void exactlyOneOfManyConcurrentReservationsWins() {
        List<Reservation> outcomes = Flux.range(0, 64)
                .flatMap(i -> store().reserve(request(FP, OwnerToken.random()).build())
                        .subscribeOn(Schedulers.parallel()), 64)
                .collectList().block(WAIT);
        assertThat(outcomes).hasSize(64);
        assertThat(outcomes).filteredOn(Reservation.Reserved.class::isInstance).hasSize(1);
        assertThat(outcomes).filteredOn(r -> r instanceof Reservation.Taken taken
                && taken.existing().state() == RecordState.IN_FLIGHT).hasSize(63);
    }

    @Test
    void aCompletedRecordReplaysItsResponseForTheSameFingerprint() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(complete(owner, response("done"))).isEqualTo(CompletionResult.STORED);

        IdempotencyRecord seen = taken(reserve(FP, OwnerToken.random()));
        assertThat(seen).isEqualTo(new IdempotencyRecord(RecordState.COMPLETED, FP, Optional.of(response("done")),
                false));
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).as("replayed as often as asked")
                .contains(response("done"));
    }

    /**
     * A retry fingerprinted under other rules than the record's (a config change rolling through the fleet): the same
     * intent by its strict fingerprint, replayed; another strict fingerprint is another payload, never told the
     * response. The record comes back with the rules and strict fingerprint it was written with.
     */
    @Test
    void underOtherFingerprintRulesTheStrictFingerprintDecides() {
        Fingerprints sameUnderOtherRules = new Fingerprints(new Fingerprint("d".repeat(64)), FP.strict(),
                "c1;ignore=/sentAt");
        Fingerprints otherUnderOtherRules = new Fingerprints(new Fingerprint("d".repeat(64)),
                new Fingerprint("e".repeat(64)), "c1;ignore=/sentAt");
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(taken(reserve(sameUnderOtherRules, OwnerToken.random())).fingerprints()).isEqualTo(FP);
        complete(owner, response("done"));

        assertThat(taken(reserve(sameUnderOtherRules, OwnerToken.random())).response()).contains(response("done"));
        IdempotencyRecord other = taken(reserve(otherUnderOtherRules, OwnerToken.random()));
        assertThat(other.response()).as("never sent for another payload").isEmpty();
        assertThat(other.fingerprints()).isEqualTo(FP);
        assertThat(taken(reserve(new Fingerprints(new Fingerprint("d".repeat(64)), FP.strict(), FP.rules()),
                OwnerToken.random())).response()).as("under the same rules the fingerprint decides").isEmpty();
    }

    @Test
    void aResponseTooLargeToKeepIsStoredAsOmitted() {
        OwnerToken owner = OwnerToken.random();
        StoredResponse omitted = new StoredResponse(201, List.of(new ResponseHeader("Location", "/things/1")),
                new byte[0], true);
        reserve(FP, owner);
        complete(owner, omitted);

        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(omitted);
    }

    @Test
    void theStoredResponseIsTheStoresOwnCopy() {
        OwnerToken owner = OwnerToken.random();
        byte[] body = "original".getBytes(StandardCharsets.UTF_8);
        reserve(FP, owner);
        complete(owner, new StoredResponse(200, List.of(), body, false));
        body[0] = 'X';
        taken(reserve(FP, OwnerToken.random())).response().orElseThrow().body()[0] = 'Y';

        assertThat(taken(reserve(FP, OwnerToken.random())).response().orElseThrow().body())
                .asString(StandardCharsets.UTF_8).isEqualTo("original");
    }

    @Test
    void anotherFingerprintSeesTheRecordButNeverItsResponse() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(taken(reserve(OTHER_FP, OwnerToken.random())))
                .isEqualTo(new IdempotencyRecord(RecordState.IN_FLIGHT, FP, Optional.empty(), false));

        complete(owner, response("done"));
        assertThat(taken(reserve(OTHER_FP, OwnerToken.random())))
                .isEqualTo(new IdempotencyRecord(RecordState.COMPLETED, FP, Optional.empty(), false));
    }

    @Test
    void anotherFingerprintSeesAnUncertainRecordAsUncertain() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT);

        assertThat(taken(reserve(OTHER_FP, OwnerToken.random())))
                .isEqualTo(new IdempotencyRecord(RecordState.UNCERTAIN, FP, Optional.empty(), false));
        assertThat(reserve(request(OTHER_FP, OwnerToken.random()).retakeUncertain()))
                .as("a retake is for the same payload only").isInstanceOf(Reservation.Taken.class);
    }

    // ---- leases

    @Test
    void aLapsedLeaseMakesTheRecordUncertainNotFree() {
        OwnerToken first = OwnerToken.random();
        reserve(request(FP, first).lease(SHORT));
        letMoreThan(SHORT);

        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).as("stays uncertain")
                .isEqualTo(RecordState.UNCERTAIN);
        assertThat(store().renew(scope, first, LEASE).block(WAIT)).as("a lapsed lease is not renewed").isFalse();
        // The original request's real answer, arriving late, settles the doubt.
        assertThat(complete(first, response("late but real"))).isEqualTo(CompletionResult.STORED);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(response("late but real"));
    }

    @Test
    void onlyTheSamePayloadTurnsALapsedLeaseUncertain() {
        OwnerToken first = OwnerToken.random();
        reserve(request(FP, first).lease(SHORT));
        letMoreThan(SHORT);

        assertThat(taken(reserve(OTHER_FP, OwnerToken.random())).state()).as("a mismatch only looks")
                .isEqualTo(RecordState.IN_FLIGHT);
        assertThat(store().renew(scope, first, LEASE).block(WAIT)).as("nothing lapsed it yet").isTrue();
        letMoreThan(SHORT);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).as("renewed: still in flight")
                .isEqualTo(RecordState.IN_FLIGHT);
    }

    @Test
    void theOwnerRenewsItsLeaseAStrangerCannot() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lease(SHORT));

        assertThat(store().renew(scope, OwnerToken.random(), LEASE).block(WAIT)).isFalse();
        assertThat(store().renew(scope, owner, LEASE).block(WAIT)).isTrue();
        letMoreThan(SHORT);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.IN_FLIGHT);
    }

    @Test
    void aRenewalSetsTheLeaseFromNow() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(store().renew(scope, owner, Duration.ofMillis(1)).block(WAIT)).isTrue();
        letMoreThan(Duration.ofMillis(1));

        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
    }

    @Test
    void onlyAnInFlightRecordIsRenewed() {
        OwnerToken owner = OwnerToken.random();
        assertThat(store().renew(scope, owner, LEASE).block(WAIT)).as("no record").isFalse();

        reserve(FP, owner);
        store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT);
        assertThat(store().renew(scope, owner, LEASE).block(WAIT)).as("uncertain").isFalse();

        complete(owner, response("done"));
        assertThat(store().renew(scope, owner, LEASE).block(WAIT)).as("completed").isFalse();
    }

    // ---- retake

    @Test
    void anUncertainRecordIsRetakenOnlyWhenTheUpstreamHonoursTheKey() {
        OwnerToken first = OwnerToken.random();
        reserve(FP, first);
        assertThat(store().markUncertain(Marks.uncertain(scope, first, "response timeout", RETENTION)).block(WAIT))
                .isEqualTo(SettleResult.DONE);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);

        OwnerToken second = OwnerToken.random();
        assertThat(reserve(request(FP, second).retakeUncertain())).isEqualTo(new Reservation.Reserved(second));
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.IN_FLIGHT);

        assertThat(complete(first, response("stale"))).as("the former owner lost it")
                .isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(store().release(scope, first).block(WAIT)).isEqualTo(SettleResult.NOT_OWNER);
        assertThat(store().markUncertain(Marks.uncertain(scope, first, "response timeout", RETENTION)).block(WAIT))
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(complete(second, response("fresh"))).isEqualTo(CompletionResult.STORED);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(response("fresh"));
    }

    @Test
    void aLapsedLeaseIsRetakenInOneStepWhenTheUpstreamHonoursTheKey() {
        OwnerToken first = OwnerToken.random();
        reserve(request(FP, first).lease(SHORT));
        letMoreThan(SHORT);

        OwnerToken second = OwnerToken.random();
        assertThat(reserve(request(FP, second).retakeUncertain())).isEqualTo(new Reservation.Reserved(second));
        assertThat(complete(first, response("late"))).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(store().renew(scope, second, LEASE).block(WAIT)).isTrue();
    }

    @Test
    void neitherAnInFlightNorACompletedRecordIsRetaken() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(taken(reserve(request(FP, OwnerToken.random()).retakeUncertain())).state())
                .isEqualTo(RecordState.IN_FLIGHT);

        complete(owner, response("done"));
        assertThat(taken(reserve(request(FP, OwnerToken.random()).retakeUncertain())).state())
                .isEqualTo(RecordState.COMPLETED);
    }

    // ---- complete

    @Test
    void onlyTheOwnerCompletesAndARetriedCompletionIsRecognised() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);

        assertThat(complete(OwnerToken.random(), response("forged"))).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.IN_FLIGHT);

        assertThat(complete(owner, response("genuine"))).isEqualTo(CompletionResult.STORED);
        assertThat(complete(owner, response("genuine"))).isEqualTo(CompletionResult.ALREADY_STORED);
        assertThat(complete(owner, response("a second body"))).as("same owner, request and status: a retry")
                .isEqualTo(CompletionResult.ALREADY_STORED);
        assertThat(complete(OwnerToken.random(), response("forged"))).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).as("nothing written twice")
                .contains(response("genuine"));
    }

    @Test
    void aCompletionWithAnotherStatusOrRequestIsNoRetry() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        complete(owner, response("done"));

        StoredResponse otherStatus = new StoredResponse(500, List.of(), new byte[0], false);
        assertThat(complete(owner, otherStatus)).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(store().complete(new Completion(scope, owner, OTHER_FP, UPSTREAM, response("done"), RETENTION,
                Optional.empty())).block(WAIT)).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(response("done"));
    }

    @Test
    void theOwnerSettlesTheDoubtOfItsUncertainRecord() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT);

        assertThat(complete(OwnerToken.random(), response("forged"))).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(complete(owner, response("real"))).isEqualTo(CompletionResult.STORED);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(response("real"));
    }

    @Test
    void aRecordThatVanishedIsStoredAnewByItsOwner() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).recordTtl(SHORT));
        letMoreThan(SHORT);

        assertThat(complete(owner, response("kept"))).isEqualTo(CompletionResult.RESTORED);
        assertThat(taken(reserve(FP, OwnerToken.random())))
                .isEqualTo(new IdempotencyRecord(RecordState.COMPLETED, FP, Optional.of(response("kept")), false));
        assertThat(complete(owner, response("kept"))).isEqualTo(CompletionResult.ALREADY_STORED);
    }

    @Test
    void anUncertainMarkThatFindsItsRecordGoneWritesItAnewSoThatTheRetryIsNotForwarded() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).recordTtl(SHORT));
        letMoreThan(SHORT);

        assertThat(store().markUncertain(new UncertainMark(scope, owner, "response timeout", RETENTION, FP, UPSTREAM,
                Optional.empty())).block(WAIT)).isEqualTo(SettleResult.RESTORED);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).as("the retry is told the outcome is unknown")
                .isEqualTo(RecordState.UNCERTAIN);
        assertThat(taken(reserve(OTHER_FP, OwnerToken.random())).fingerprints().fingerprint()).as("its fingerprint written anew")
                .isEqualTo(FP.fingerprint());
        assertThat(store().markUncertain(new UncertainMark(scope, owner, "response timeout", RETENTION, FP, UPSTREAM,
                Optional.empty())).block(WAIT)).as("a retried mark").isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(complete(owner, response("late"))).as("the owner's late answer still settles it")
                .isEqualTo(CompletionResult.STORED);
    }

    @Test
    void aRecordWrittenAnewByAnUncertainMarkKeepsItsLookup() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).recordTtl(SHORT).lookup(SHORT));
        letMoreThan(SHORT);

        assertThat(store().markUncertain(new UncertainMark(scope, owner, "response timeout", RETENTION, FP, UPSTREAM,
                Optional.of(new LookupValues(LOOKUP, SHORT)))).block(WAIT)).isEqualTo(SettleResult.RESTORED);
        letMoreThan(SHORT);
        List<ReconcileQueue.DueLookup> due = claimOwn(LEASE);
        assertThat(due).hasSize(1);
        assertThat(due.get(0).values()).isEqualTo(LOOKUP);
        assertThat(due.get(0).owner()).isEqualTo(owner.value());
    }

    @Test
    void anUncertainMarkOfAReleasedOwnerDoesNotBringItsRecordBack() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        releaseByOperator(scope);

        assertThat(store().markUncertain(new UncertainMark(scope, owner, "response timeout", RETENTION, FP, UPSTREAM,
                Optional.empty())).block(WAIT)).isEqualTo(SettleResult.NOT_OWNER);
        assertFree();
    }

    // ---- release

    @Test
    void theOwnerReleasesTheKeyAndARetriedReleaseIsRecognised() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(store().release(scope, OwnerToken.random()).block(WAIT)).isEqualTo(SettleResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.IN_FLIGHT);

        assertThat(store().release(scope, owner).block(WAIT)).isEqualTo(SettleResult.DONE);
        assertThat(store().release(scope, owner).block(WAIT)).isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(store().release(scope, OwnerToken.random()).block(WAIT)).as("a stranger")
                .isEqualTo(SettleResult.NOT_OWNER);

        OwnerToken next = OwnerToken.random();
        assertThat(reserve(OTHER_FP, next)).as("free for any payload").isEqualTo(new Reservation.Reserved(next));
        assertThat(store().release(scope, owner).block(WAIT)).as("even once the key was taken again")
                .isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(store().complete(new Completion(scope, next, OTHER_FP, UPSTREAM, response("next"), RETENTION,
                Optional.empty())).block(WAIT)).as("the next reservation is untouched")
                .isEqualTo(CompletionResult.STORED);
    }

    @Test
    void everyOwnerReleasedIsRememberedNotOnlyTheLast() {
        OwnerToken first = OwnerToken.random();
        OwnerToken second = OwnerToken.random();
        reserve(FP, first);
        store().release(scope, first).block(WAIT);
        reserve(FP, second);
        store().release(scope, second).block(WAIT);

        assertThat(store().release(scope, second).block(WAIT)).isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(store().release(scope, first).block(WAIT)).isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(reserve(FP, first)).isEqualTo(new Reservation.Fenced(first));
        assertThat(reserve(FP, second)).isEqualTo(new Reservation.Fenced(second));
    }

    @Test
    void aReserveThatLandsAfterItsOwnReleaseCannotCreateTheRecord() {
        OwnerToken late = OwnerToken.random();
        assertThat(store().release(scope, late).block(WAIT)).as("nothing to release yet")
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(store().release(scope, late).block(WAIT)).as("and nothing it released itself")
                .isEqualTo(SettleResult.NOT_OWNER);

        assertThat(reserve(request(FP, late).willWait())).isEqualTo(new Reservation.Fenced(late));
        assertFree();
    }

    @Test
    void aReserveThatLandsAfterItsReleaseOfAnotherOwnersRecordCannotTakeTheKey() {
        OwnerToken holder = OwnerToken.random();
        OwnerToken late = OwnerToken.random();
        reserve(FP, holder);
        assertThat(store().release(scope, late).block(WAIT)).isEqualTo(SettleResult.NOT_OWNER);
        store().markUncertain(Marks.uncertain(scope, holder, "response timeout", RETENTION)).block(WAIT);

        assertThat(reserve(request(FP, late).retakeUncertain())).as("not even an uncertain one to retake")
                .isEqualTo(new Reservation.Fenced(late));
        assertThat(store().release(scope, holder).block(WAIT)).isEqualTo(SettleResult.DONE);
        assertThat(reserve(FP, late)).isEqualTo(new Reservation.Fenced(late));
        assertFree();
    }

    @Test
    void aReserveSentAgainAfterItsReservationWasReleasedDoesNotBringItBack() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(store().release(scope, owner).block(WAIT)).isEqualTo(SettleResult.DONE);

        assertThat(reserve(FP, owner)).isEqualTo(new Reservation.Fenced(owner));
        assertThat(store().release(scope, owner).block(WAIT)).as("its retried release still recognised")
                .isEqualTo(SettleResult.ALREADY_DONE);
        assertFree();
    }

    // ---- an operator's release

    @ParameterizedTest
    @EnumSource(value = RecordState.class, names = {"IN_FLIGHT", "UNCERTAIN"})
    void theFormerOwnersLateCompleteAfterAnOperatorReleaseIsFencedNotWrittenAnew(RecordState state) {
        OwnerToken former = OwnerToken.random();
        reserve(FP, former);
        if (state == RecordState.UNCERTAIN) {
            store().markUncertain(Marks.uncertain(scope, former, "response timeout", RETENTION)).block(WAIT);
        }
        assertThat(releaseByOperator(scope)).isEqualTo(state.name());

        assertThat(complete(former, response("late"))).isEqualTo(CompletionResult.FENCED);
        assertThat(store().renew(scope, former, LEASE).block(WAIT)).isFalse();
        assertThat(store().markUncertain(Marks.uncertain(scope, former, "response timeout", RETENTION)).block(WAIT))
                .as("settled by an operator").isEqualTo(SettleResult.NOT_OWNER);
        assertThat(store().release(scope, former).block(WAIT)).as("not its own release")
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(reserve(FP, former)).as("nor its late reserve").isEqualTo(new Reservation.Fenced(former));
        assertFree();
    }

    @Test
    void theRetryAfterAnOperatorReleaseIsAFreshRequestThatTheFormerOwnerCannotTouch() {
        OwnerToken former = OwnerToken.random();
        reserve(FP, former);
        releaseByOperator(scope);

        OwnerToken retry = OwnerToken.random();
        assertThat(reserve(FP, retry)).isEqualTo(new Reservation.Reserved(retry));
        assertThat(complete(former, response("late"))).isEqualTo(CompletionResult.FENCED);
        assertThat(complete(retry, response("fresh"))).isEqualTo(CompletionResult.STORED);
        assertThat(complete(former, response("late"))).isEqualTo(CompletionResult.FENCED);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(response("fresh"));
    }

    @Test
    void aReleasedOwnersLateReserveIsToldTheKeysResultOnceThereIsOneButStillCannotWrite() {
        // A replay writes nothing, so the fence need not hide it (and the replay's script skips the fence's read).
        OwnerToken former = OwnerToken.random();
        reserve(FP, former);
        releaseByOperator(scope);
        OwnerToken retry = OwnerToken.random();
        reserve(FP, retry);
        complete(retry, response("fresh"));

        assertThat(taken(reserve(FP, former)).response()).contains(response("fresh"));
        assertThat(reserve(OTHER_FP, former)).as("another payload: the fence still answers first")
                .isEqualTo(new Reservation.Fenced(former));
        assertThat(complete(former, response("late"))).isEqualTo(CompletionResult.FENCED);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(response("fresh"));
    }

    @Test
    void anOperatorReleasesOnlyAnUnsettledRecord() {
        assertThat(releaseByOperator(scope)).isEqualTo("ABSENT");
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        complete(owner, response("done"));

        assertThat(releaseByOperator(scope)).isEqualTo("COMPLETED");
        assertThat(complete(owner, response("done"))).isEqualTo(CompletionResult.ALREADY_STORED);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(response("done"));
    }

    @Test
    void anUncertainRecordIsReleasedByItsOwnerACompletedOneByNobody() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT);
        assertThat(store().release(scope, owner).block(WAIT)).isEqualTo(SettleResult.DONE);

        OwnerToken next = OwnerToken.random();
        reserve(FP, next);
        complete(next, response("done"));
        assertThat(store().release(scope, next).block(WAIT)).isEqualTo(SettleResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.COMPLETED);
    }

    // ---- markUncertain

    @Test
    void theOwnerMarksItsRecordUncertainAndARetriedMarkIsRecognised() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(store().markUncertain(Marks.uncertain(scope, OwnerToken.random(), "forged", RETENTION)).block(WAIT))
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.IN_FLIGHT);

        assertThat(store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT))
                .isEqualTo(SettleResult.DONE);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
        assertThat(store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT))
                .isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(store().markUncertain(Marks.uncertain(scope, owner, "another reason", RETENTION)).block(WAIT))
                .as("another reason is not a retry").isEqualTo(SettleResult.NOT_OWNER);
    }

    @Test
    void theOwnerMarksItsRecordThatTurnedUncertainWhenItsLeaseLapsed() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lease(SHORT));
        letMoreThan(SHORT);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);

        assertThat(store().markUncertain(Marks.uncertain(scope, OwnerToken.random(), "forged", RETENTION)).block(WAIT))
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT))
                .as("the owner knows the true reason").isEqualTo(SettleResult.DONE);
        assertThat(store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT))
                .as("a retry").isEqualTo(SettleResult.ALREADY_DONE);
        assertThat(store().markUncertain(Marks.uncertain(scope, owner, "another reason", RETENTION)).block(WAIT))
                .as("said once").isEqualTo(SettleResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
        assertThat(complete(owner, response("late but real"))).isEqualTo(CompletionResult.STORED);
    }

    @Test
    void onlyAnInFlightRecordIsMarkedUncertain() {
        // (A record that is gone is written anew: anUncertainMarkThatFindsItsRecordGoneWritesItAnew...)
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        complete(owner, response("done"));
        assertThat(store().markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT))
                .isEqualTo(SettleResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.COMPLETED);
    }

    // ---- processes

    @Test
    void aProcessStartedByAStoredResponseIsLinkedInTheSameStepAndEndsOnce() {
        OwnerToken owner = OwnerToken.random();
        String processId = "p-" + UUID.randomUUID();
        reserve(FP, owner);
        completeStartingProcess(owner, processId, RETENTION);
        assertThat(taken(reserve(FP, OwnerToken.random())).processEnded()).isFalse();

        assertThat(store().processEnded("another-route", processId, "COMPLETED", RETENTION).block(WAIT))
                .as("linked on its own route only").isFalse();
        assertThat(store().processEnded(scope.routeId(), processId, "COMPLETED", RETENTION).block(WAIT)).isTrue();
        assertThat(store().processEnded(scope.routeId(), processId, "COMPLETED", RETENTION).block(WAIT))
                .as("ends once").isFalse();

        IdempotencyRecord replay = taken(reserve(FP, OwnerToken.random()));
        assertThat(replay.processEnded()).isTrue();
        assertThat(replay.response()).contains(response("accepted"));
        assertThat(taken(reserve(OTHER_FP, OwnerToken.random())).processEnded()).as("a mismatch learns nothing")
                .isFalse();
    }

    @Test
    void aProcessEndsOnlyForTheRecordThatStartedIt() {
        String processId = "p-" + UUID.randomUUID();
        assertThat(store().processEnded(scope.routeId(), processId, "COMPLETED", RETENTION).block(WAIT))
                .as("never linked").isFalse();

        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        complete(owner, response("no process"));
        assertThat(store().processEnded(scope.routeId(), processId, "COMPLETED", RETENTION).block(WAIT))
                .as("the record started no process").isFalse();
        assertThat(taken(reserve(FP, OwnerToken.random())).processEnded()).isFalse();

        IdempotencyScope other = newScope();
        OwnerToken otherOwner = OwnerToken.random();
        assertThat(store().reserve(new ReservationRequest(other, FP, otherOwner, LEASE, RETENTION, UPSTREAM, false,
                false, "POST", "/merchants", Optional.empty())).block(WAIT)).isInstanceOf(Reservation.Reserved.class);
        assertThat(store().complete(new Completion(other, otherOwner, FP, UPSTREAM, response("accepted"), RETENTION,
                Optional.of("p-other"))).block(WAIT)).isEqualTo(CompletionResult.STORED);
        assertThat(store().processEnded(scope.routeId(), processId, "COMPLETED", RETENTION).block(WAIT))
                .as("another record's process is not this one").isFalse();
        assertThat(taken(reserve(FP, OwnerToken.random())).processEnded()).isFalse();
    }

    // ---- wake-ups

    /** The three ways an owner settles its record, each of which must wake the requests waiting on it. */
    enum Settle {
        COMPLETE, RELEASE, MARK_UNCERTAIN;

        void by(IdempotencyStore store, IdempotencyScope scope, OwnerToken owner) {
            assertThat(run(store, scope, owner)).isIn(CompletionResult.STORED, SettleResult.DONE);
        }

        /** By someone who does not own the record: refused. */
        void tryBy(IdempotencyStore store, IdempotencyScope scope, OwnerToken stranger) {
            assertThat(run(store, scope, stranger)).isIn(CompletionResult.NOT_OWNER, SettleResult.NOT_OWNER);
        }

        private Object run(IdempotencyStore store, IdempotencyScope scope, OwnerToken owner) {
            return switch (this) {
                case COMPLETE -> store.complete(new Completion(scope, owner, FP, UPSTREAM, response("done"),
                        RETENTION, Optional.empty())).block(WAIT);
                case RELEASE -> store.release(scope, owner).block(WAIT);
                case MARK_UNCERTAIN -> store.markUncertain(Marks.uncertain(scope, owner, "response timeout", RETENTION)).block(WAIT);
            };
        }
    }

    @ParameterizedTest
    @EnumSource(Settle.class)
    void settlingWakesTheWaitersAndNothingElseDoes(Settle settle) throws Exception {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        try (SettleWaiter waiter = store().awaitSettle(scope)) {
            CompletableFuture<Void> woken = waiter.settled().toFuture();
            assertThat(taken(reserve(request(FP, OwnerToken.random()).willWait())).state())
                    .isEqualTo(RecordState.IN_FLIGHT);
            store().renew(scope, owner, LEASE).block(WAIT);
            OwnerToken stranger = OwnerToken.random();
            Settle.COMPLETE.tryBy(store(), scope, stranger);
            Settle.RELEASE.tryBy(store(), scope, stranger);
            Settle.MARK_UNCERTAIN.tryBy(store(), scope, stranger);
            reserve(OTHER_FP, OwnerToken.random());
            deliverWakeUps();
            assertThat(woken).as("nothing settled yet").isNotDone();

            settle.by(store(), scope, owner);
            woken.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    @Test
    void aLapsedLeaseWakesTheRequestsThatSaidTheyWouldWait() throws Exception {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        try (SettleWaiter waiter = store().awaitSettle(scope)) {
            CompletableFuture<Void> woken = waiter.settled().toFuture();
            reserve(request(FP, OwnerToken.random()).willWait());
            lapse(owner);
            deliverWakeUps();
            assertThat(woken).as("a lapse is only found by a reservation").isNotDone();

            assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
            woken.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    @Test
    void aLapsedLeaseWakesNobodyWhenNobodySaidItWouldWait() throws Exception {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        try (SettleWaiter waiter = store().awaitSettle(scope)) {
            CompletableFuture<Void> woken = waiter.settled().toFuture();
            lapse(owner);
            assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
            deliverWakeUps();
            assertThat(woken).isNotDone();

            // The owner's late answer still settles it, and that wakes whoever registered.
            assertThat(complete(owner, response("late"))).isEqualTo(CompletionResult.STORED);
            woken.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    // ---- lifetimes

    @Test
    void anUnsettledRecordLivesItsRecordTtl() {
        reserve(request(FP, OwnerToken.random()).recordTtl(SHORT));
        letMoreThan(SHORT);

        assertFree();
    }

    @Test
    void aLapseStartsTheRecordTtlOfTheReservationThatFoundIt() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lease(SHORT));
        letMoreThan(SHORT);
        assertThat(taken(reserve(request(FP, OwnerToken.random()).recordTtl(SHORT))).state())
                .isEqualTo(RecordState.UNCERTAIN);
        letMoreThan(SHORT);

        assertFree();
    }

    @Test
    void aRetakeStartsItsOwnRecordTtl() {
        OwnerToken first = OwnerToken.random();
        reserve(FP, first);
        store().markUncertain(Marks.uncertain(scope, first, "response timeout", RETENTION)).block(WAIT);
        reserve(request(FP, OwnerToken.random()).retakeUncertain().recordTtl(SHORT));
        letMoreThan(SHORT);

        assertFree();
    }

    @Test
    void aCompletedRecordLivesTheCompletionsTtl() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        assertThat(store().complete(new Completion(scope, owner, FP, UPSTREAM, response("done"), SHORT,
                Optional.empty())).block(WAIT)).isEqualTo(CompletionResult.STORED);
        letMoreThan(SHORT);

        assertFree();
    }

    @Test
    void anUncertainMarkSetsTheRecordsTtl() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        store().markUncertain(Marks.uncertain(scope, owner, "response timeout", SHORT)).block(WAIT);
        letMoreThan(SHORT);

        assertFree();
    }

    @Test
    void theRetentionStartsWhenTheLinkedProcessEndsAndTheProcessLeavesTheQueue() {
        OwnerToken owner = OwnerToken.random();
        String processId = "p-" + UUID.randomUUID();
        reserve(FP, owner);
        completeStartingProcess(owner, processId, RETENTION);
        assertThat(store().processEnded(scope.routeId(), processId, "COMPLETED", SHORT).block(WAIT)).isTrue();
        letMoreThan(SHORT);

        assertThat(pollOwn(LEASE, process -> ProcessQueue.PollResult.RUNNING)).as("ended by a status read").isEmpty();
        assertFree();
    }

    @Test
    void aProcessLinkLivesAsLongAsItsRecord() {
        OwnerToken owner = OwnerToken.random();
        String processId = "p-" + UUID.randomUUID();
        reserve(FP, owner);
        completeStartingProcess(owner, processId, SHORT);
        letMoreThan(SHORT);

        assertThat(store().processEnded(scope.routeId(), processId, "COMPLETED", RETENTION).block(WAIT)).isFalse();
        assertFree();
    }

    // ---- the fleet's queue of pending processes

    @Test
    void aStored202QueuesItsProcessAndAPollThatSeesItsEndStartsTheRetention() {
        OwnerToken owner = OwnerToken.random();
        String processId = "p-" + UUID.randomUUID();
        reserve(FP, owner);
        completeStartingProcess(owner, processId, RETENTION);
        letMoreThan(SHORT);

        List<ProcessQueue.DueProcess> asked = pollOwn(LEASE, process -> new ProcessQueue.PollResult.Ended("COMPLETED", SHORT));

        assertThat(asked).containsExactly(new ProcessQueue.DueProcess(scope.hash(), scope.routeId(), processId, UPSTREAM));
        assertThat(taken(reserve(FP, OwnerToken.random())).processEnded()).as("the replay says so").isTrue();
        letMoreThan(SHORT);
        assertThat(pollOwn(LEASE, process -> ProcessQueue.PollResult.RUNNING)).as("ended: out of the queue").isEmpty();
        assertFree();
    }

    @Test
    void aProcessStillRunningIsAskedAgainLater() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        completeStartingProcess(owner, "p-" + UUID.randomUUID(), RETENTION);
        letMoreThan(SHORT);

        assertThat(pollOwn(SHORT, process -> ProcessQueue.PollResult.RUNNING)).hasSize(1);
        letMoreThan(SHORT);
        assertThat(pollOwn(SHORT, process -> new ProcessQueue.PollResult.Ended("COMPLETED", RETENTION)))
                .as("asked again once the longest delay passed").hasSize(1);
        assertThat(taken(reserve(FP, OwnerToken.random())).processEnded()).isTrue();
    }

    @Test
    void aClaimedProcessIsLeftToItsClaimantUntilTheClaimLapses() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        completeStartingProcess(owner, "p-" + UUID.randomUUID(), RETENTION);
        letMoreThan(SHORT);
        // An instance claims the poll and dies before it answers.
        Sinks.One<ProcessQueue.PollResult> never = Sinks.one();
        List<String> claimedByTheDead = new CopyOnWriteArrayList<>();
        Disposable dead = processes().pollDue(32, SHORT, SHORT, process -> {
            if (!process.scopeHash().equals(scope.hash())) {
                return Mono.just(ProcessQueue.PollResult.RUNNING);
            }
            claimedByTheDead.add(process.processId());
            return never.asMono();
        }).subscribe();
        try {
            Flux.interval(Duration.ofMillis(5)).onBackpressureDrop().filter(t -> !claimedByTheDead.isEmpty()).next()
                    .block(WAIT);
            assertThat(pollOwn(SHORT, process -> ProcessQueue.PollResult.RUNNING)).as("still claimed").isEmpty();

            letMoreThan(CLAIM);
            assertThat(pollOwn(SHORT, process -> new ProcessQueue.PollResult.Ended("COMPLETED", RETENTION)))
                    .as("the claim lapsed: another instance takes it").hasSize(1);
        } finally {
            dead.dispose();
        }
        assertThat(taken(reserve(FP, OwnerToken.random())).processEnded()).isTrue();
    }

    @Test
    void aProcessWhoseRecordIsGoneIsNotPolled() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        completeStartingProcess(owner, "p-" + UUID.randomUUID(), SHORT);
        letMoreThan(SHORT);

        assertThat(pollOwn(LEASE, process -> ProcessQueue.PollResult.RUNNING)).isEmpty();
    }

    // ---- reconciliation with the upstream

    static final Map<String, String> LOOKUP = Map.of("key", "k-1", "body:/taxId", "ACME/../1?x=y");

    @Test
    void anUncertainRecordWithLookupValuesIsNotDueBeforeItsDelay() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lookup(LEASE));
        assertThat(store().markUncertain(Marks.uncertain(scope, owner, "timeout", RETENTION)).block(WAIT)).isEqualTo(SettleResult.DONE);

        assertThat(claimOwn(LEASE)).isEmpty();
    }

    @Test
    void anUncertainRecordWithLookupValuesIsDueAfterItsDelayWithWhatItsReservationKept() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lookup(SHORT));
        store().markUncertain(Marks.uncertain(scope, owner, "timeout", RETENTION)).block(WAIT);
        letMoreThan(SHORT);

        List<ReconcileQueue.DueLookup> due = claimOwn(LEASE);

        assertThat(due).hasSize(1);
        assertThat(due.get(0).values()).isEqualTo(LOOKUP);
        assertThat(due.get(0).owner()).isEqualTo(owner.value());
        assertThat(due.get(0).routeId()).isEqualTo(scope.routeId());
        assertThat(due.get(0).upstream()).isEqualTo(UPSTREAM);
    }

    @Test
    void aRecordWithoutLookupValuesIsNeverDue() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        store().markUncertain(Marks.uncertain(scope, owner, "timeout", RETENTION)).block(WAIT);
        letMoreThan(SHORT);

        assertThat(claimOwn(LEASE)).isEmpty();
    }

    @Test
    void aRecordWhoseLeaseLapsedIsDueToo() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lookup(SHORT));
        lapse(owner);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
        letMoreThan(SHORT);

        assertThat(claimOwn(LEASE)).hasSize(1);
    }

    @Test
    void aFoundLookupCompletesTheRecordAndTheOwnersLateAnswerChangesNothing() {
        OwnerToken owner = OwnerToken.random();
        ReconcileQueue.DueLookup due = dueUncertain(owner);
        StoredResponse found = new StoredResponse(200, List.of(new ResponseHeader("Idempotency-Reconciled", "true")),
                "{\"id\":\"m-1\"}".getBytes(StandardCharsets.UTF_8), false);

        assertThat(lookups().settle(due, new ReconcileQueue.LookupResult.Found(found, RETENTION, "found", Optional.empty()))
                .block(WAIT)).isTrue();

        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(found);
        assertThat(complete(owner, response("late"))).isEqualTo(CompletionResult.NOT_OWNER);
        assertThat(taken(reserve(FP, OwnerToken.random())).response()).as("not overwritten").contains(found);
        letMoreThan(SHORT);
        assertThat(claimOwn(LEASE)).as("out of the queue").isEmpty();
    }

    @Test
    void aFoundLookupNamingAnUnfinishedProcessKeepsItPendingAndQueuesItsPollsAsAStored202Would() {
        OwnerToken owner = OwnerToken.random();
        ReconcileQueue.DueLookup due = dueUncertain(owner);
        String processId = "p-" + UUID.randomUUID();
        StoredResponse found = new StoredResponse(200, List.of(new ResponseHeader("Idempotency-Reconciled", "true")),
                ("{\"processId\":\"" + processId + "\",\"status\":\"PENDING\"}").getBytes(StandardCharsets.UTF_8),
                false);

        assertThat(lookups().settle(due, new ReconcileQueue.LookupResult.Found(found, RETENTION, "found",
                Optional.of(processId))).block(WAIT)).isTrue();

        IdempotencyRecord replayed = taken(reserve(FP, OwnerToken.random()));
        assertThat(replayed.response()).contains(found);
        assertThat(replayed.processEnded()).as("its process still runs").isFalse();
        letMoreThan(SHORT);
        List<ProcessQueue.DueProcess> asked = pollOwn(LEASE,
                process -> new ProcessQueue.PollResult.Ended("COMPLETED", SHORT));
        assertThat(asked).containsExactly(new ProcessQueue.DueProcess(scope.hash(), scope.routeId(), processId,
                UPSTREAM));
        assertThat(taken(reserve(FP, OwnerToken.random())).processEnded()).as("ended by its poll").isTrue();
    }

    @Test
    void aFoundLookupsProcessIsLinkedSoThatAStatusReadEndsIt() {
        OwnerToken owner = OwnerToken.random();
        ReconcileQueue.DueLookup due = dueUncertain(owner);
        String processId = "p-" + UUID.randomUUID();
        StoredResponse found = new StoredResponse(200, List.of(), "{}".getBytes(StandardCharsets.UTF_8), false);
        assertThat(lookups().settle(due, new ReconcileQueue.LookupResult.Found(found, RETENTION, "found",
                Optional.of(processId))).block(WAIT)).isTrue();

        assertThat(store().processEnded(scope.routeId(), processId, "COMPLETED", SHORT).block(WAIT)).isTrue();
        letMoreThan(SHORT);
        assertFree();
    }

    @Test
    void aNotFoundLookupReleasesTheRecordAndTheOwnersLateAnswerDoesNotBringItBack() {
        OwnerToken owner = OwnerToken.random();
        ReconcileQueue.DueLookup due = dueUncertain(owner);

        assertThat(lookups().settle(due, new ReconcileQueue.LookupResult.NotFound("not found")).block(WAIT))
                .isTrue();

        assertThat(complete(owner, response("late"))).as("fenced as by an operator's release")
                .isEqualTo(CompletionResult.FENCED);
        assertThat(reserve(FP, owner)).as("nor its late reserve").isEqualTo(new Reservation.Fenced(owner));
        assertFree();
    }

    @Test
    void aFailedLookupLeavesTheRecordUncertainAndAsksAgainAfterTheRetryDelay() {
        OwnerToken owner = OwnerToken.random();
        ReconcileQueue.DueLookup due = dueUncertain(owner);

        assertThat(lookups().settle(due, new ReconcileQueue.LookupResult.Failed(SHORT, SHORT)).block(WAIT)).isTrue();

        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
        letMoreThan(SHORT);
        assertThat(claimOwn(LEASE)).as("asked again").hasSize(1);
    }

    @Test
    void aLookupThatEndsAfterTheOwnerSettledTheRecordChangesNothing() {
        OwnerToken owner = OwnerToken.random();
        ReconcileQueue.DueLookup due = dueUncertain(owner);
        assertThat(complete(owner, response("the real answer"))).isEqualTo(CompletionResult.STORED);

        assertThat(lookups().settle(due, new ReconcileQueue.LookupResult.NotFound("not found")).block(WAIT))
                .isFalse();

        assertThat(taken(reserve(FP, OwnerToken.random())).response()).contains(response("the real answer"));
    }

    @Test
    void aClaimedLookupIsLeftToItsClaimantUntilTheClaimLapses() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lookup(SHORT));
        store().markUncertain(Marks.uncertain(scope, owner, "timeout", RETENTION)).block(WAIT);
        letMoreThan(SHORT);
        assertThat(claimOwn(CLAIM)).as("claimed by an instance that then dies").hasSize(1);

        assertThat(claimOwn(CLAIM)).as("still claimed").isEmpty();
        letMoreThan(CLAIM);
        assertThat(claimOwn(LEASE)).as("the claim lapsed: another instance takes it").hasSize(1);
    }

    /** An UNCERTAIN record of this test's scope, claimed for its lookup. */
    ReconcileQueue.DueLookup dueUncertain(OwnerToken owner) {
        reserve(request(FP, owner).lookup(SHORT));
        store().markUncertain(Marks.uncertain(scope, owner, "timeout", RETENTION)).block(WAIT);
        letMoreThan(SHORT);
        List<ReconcileQueue.DueLookup> due = claimOwn(LEASE);
        assertThat(due).hasSize(1);
        return due.get(0);
    }

    /** One claim round, as an instance's reconciler runs it: this test's own due lookups. */
    List<ReconcileQueue.DueLookup> claimOwn(Duration claim) {
        return lookups().claimDue(1000, claim).filter(due -> due.scopeHash().equals(scope.hash())).collectList()
                .block(WAIT);
    }

    /**
     * One round of the queue, as an instance's watcher runs it: this test's own process gets {@code answer}, any
     * other test's (the Redis store is shared) is left running. Returns this test's processes that were asked.
     */
    List<ProcessQueue.DueProcess> pollOwn(Duration maxDelay,
            Function<ProcessQueue.DueProcess, ProcessQueue.PollResult> answer) {
        List<ProcessQueue.DueProcess> asked = new CopyOnWriteArrayList<>();
        processes().pollDue(32, LEASE, maxDelay, process -> {
            if (!process.scopeHash().equals(scope.hash())) {
                return Mono.just(ProcessQueue.PollResult.RUNNING);
            }
            asked.add(process);
            return Mono.just(answer.apply(process));
        }).block(WAIT);
        return asked;
    }

    // ---- helpers

    static IdempotencyScope newScope() {
        return new IdempotencyScope("tenant", "route", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    static StoredResponse response(String body) {
        return new StoredResponse(202, List.of(new ResponseHeader("Location", "/processes/1"),
                new ResponseHeader("Retry-After", "3")), body.getBytes(StandardCharsets.UTF_8), false);
    }

    /** Lets a deadline {@code time} away pass: deadlines are exclusive, so one millisecond more. */
    void letMoreThan(Duration time) {
        letPass(time.plusMillis(1));
    }

    /** Ends the owner's lease now, without a short lease racing the setup before it. */
    void lapse(OwnerToken owner) {
        assertThat(store().renew(scope, owner, Duration.ofMillis(1)).block(WAIT)).isTrue();
        letMoreThan(Duration.ofMillis(1));
    }

    Reservation reserve(Fingerprints fingerprint, OwnerToken owner) {
        return reserve(request(fingerprint, owner));
    }

    Reservation reserve(Request request) {
        return store().reserve(request.build()).block(WAIT);
    }

    Request request(Fingerprints fingerprint, OwnerToken owner) {
        return new Request(fingerprint, owner);
    }

    CompletionResult complete(OwnerToken owner, StoredResponse response) {
        return store().complete(new Completion(scope, owner, FP, UPSTREAM, response, RETENTION, Optional.empty()))
                .block(WAIT);
    }

    void completeStartingProcess(OwnerToken owner, String processId, Duration ttl) {
        assertThat(store().complete(new Completion(scope, owner, FP, UPSTREAM, response("accepted"), ttl,
                Optional.of(processId))).block(WAIT)).isEqualTo(CompletionResult.STORED);
    }

    static IdempotencyRecord taken(Reservation reservation) {
        assertThat(reservation).isInstanceOf(Reservation.Taken.class);
        return ((Reservation.Taken) reservation).existing();
    }

    /** The key holds no record: the next reservation, for any payload, gets it. */
    void assertFree() {
        OwnerToken next = OwnerToken.random();
        assertThat(reserve(OTHER_FP, next)).isEqualTo(new Reservation.Reserved(next));
    }

    /** A reservation of this test's scope; long lease, a day's ttl, no waiting, no retake unless told. */
    final class Request {
        private final Fingerprints fingerprint;
        private final OwnerToken owner;
        private Duration lease = LEASE;
        private Duration recordTtl = RETENTION.plus(LEASE);
        private boolean willWait;
        private boolean retakeUncertain;
        private Optional<LookupValues> lookup = Optional.empty();

        Request(Fingerprints fingerprint, OwnerToken owner) {
            this.fingerprint = fingerprint;
            this.owner = owner;
        }

        Request lease(Duration lease) {
            this.lease = lease;
            return this;
        }

        Request recordTtl(Duration recordTtl) {
            this.recordTtl = recordTtl;
            return this;
        }

        Request willWait() {
            this.willWait = true;
            return this;
        }

        Request retakeUncertain() {
            this.retakeUncertain = true;
            return this;
        }

        /** On a reconciling route: {@link #LOOKUP} kept, looked up {@code after} the record turns UNCERTAIN. */
        Request lookup(Duration after) {
            this.lookup = Optional.of(new LookupValues(LOOKUP, after));
            return this;
        }

        ReservationRequest build() {
            return new ReservationRequest(scope, fingerprint, owner, lease, recordTtl, UPSTREAM, willWait,
                    retakeUncertain, "POST", "/merchants", lookup);
        }
    }
}
