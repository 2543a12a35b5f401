package dev.retrysafe.gateway.idempotency.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.CompletionResult;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.SettleResult;
import dev.retrysafe.gateway.idempotency.support.InMemoryIdempotencyStore;
import dev.retrysafe.gateway.idempotency.support.Marks;
import dev.retrysafe.gateway.idempotency.support.MutableClock;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * The store contract on the in-memory store, its clock moved by hand; plus what only a hand-moved clock can pin
 * down: the exact edges of deadlines, the released owners' minute, and what only a look at a record shows.
 */
class InMemoryIdempotencyStoreContractTest extends IdempotencyStoreContract {
    private final MutableClock clock = new MutableClock(Instant.parse("2026-01-15T10:00:00Z"));
    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore(clock).firstProcessPoll(SHORT);

    @Override
    protected IdempotencyStore store() {
        return store;
    }

    @Override
    protected ProcessQueue processes() {
        return store;
    }

    @Override
    protected ReconcileQueue lookups() {
        return store;
    }

    @Override
    protected void letPass(Duration time) {
        clock.advance(time);
    }

    /** Wake-ups are signalled within the store call that causes them. */
    @Override
    protected void deliverWakeUps() {
    }

    @Override
    protected String releaseByOperator(IdempotencyScope scope) {
        return store.releaseByOperator(scope).block(WAIT);
    }

    @Test
    void aLeaseHoldsUpToItsLastMillisecond() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lease(SHORT));
        clock.advance(SHORT);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.IN_FLIGHT);

        clock.advance(Duration.ofMillis(1));
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.UNCERTAIN);
        assertThat(store.record(scope).orElseThrow().uncertainReason())
                .contains(InMemoryIdempotencyStore.LEASE_LAPSED_REASON);
    }

    @Test
    void aRecordLivesUpToItsLastMillisecond() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        store.complete(new Completion(scope, owner, FP, UPSTREAM, response("done"), SHORT,
                java.util.Optional.empty())).block(WAIT);
        clock.advance(SHORT);
        assertThat(taken(reserve(FP, OwnerToken.random())).state()).isEqualTo(RecordState.COMPLETED);

        clock.advance(Duration.ofMillis(1));
        assertThat(store.record(scope)).isEmpty();
        assertFree();
    }

    @Test
    void aRetriedReleaseIsRecognisedForAMinute() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        store.release(scope, owner).block(WAIT);
        clock.advance(InMemoryIdempotencyStore.RELEASED_OWNERS_TTL);
        assertThat(store.release(scope, owner).block(WAIT)).isEqualTo(SettleResult.ALREADY_DONE);

        clock.advance(Duration.ofMillis(1));
        assertThat(store.release(scope, owner).block(WAIT)).isEqualTo(SettleResult.NOT_OWNER);
    }

    @Test
    void aReleasedOwnerIsFencedForAMinuteAtLeast() {
        OwnerToken late = OwnerToken.random();
        store.release(scope, late).block(WAIT);
        clock.advance(InMemoryIdempotencyStore.RELEASED_OWNERS_TTL);
        assertThat(reserve(FP, late)).isEqualTo(new Reservation.Fenced(late));

        clock.advance(Duration.ofMillis(1));
        assertThat(reserve(FP, late)).isEqualTo(new Reservation.Reserved(late));
    }

    @Test
    void anOperatorReleaseFencesTheFormerOwnerAsLongAsTheRecordWouldHaveLived() {
        OwnerToken former = OwnerToken.random();
        reserve(request(FP, former).recordTtl(Duration.ofHours(2)));
        store.releaseByOperator(scope).block(WAIT);
        clock.advance(Duration.ofHours(2));
        assertThat(complete(former, response("late"))).isEqualTo(CompletionResult.FENCED);

        clock.advance(Duration.ofMillis(1));
        assertThat(complete(former, response("late"))).as("as after the record's own end: Redis lost it")
                .isEqualTo(CompletionResult.RESTORED);
    }

    @Test
    void aReserveSentAgainCountsNoWaiter() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).willWait());
        reserve(request(FP, owner).willWait());

        assertThat(store.record(scope).orElseThrow().waiters()).isZero();
    }

    @Test
    void theOwnersMarkOfItsLapsedRecordWritesTheTrueReason() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lease(SHORT));
        clock.advance(SHORT.plusMillis(1));
        reserve(FP, OwnerToken.random());
        store.markUncertain(Marks.uncertain(scope, owner, "no response within the response timeout", RETENTION)).block(WAIT);

        assertThat(store.record(scope).orElseThrow().uncertainReason())
                .contains("no response within the response timeout");
    }

    @Test
    void theRecordCanBeLookedAtWithoutChangingIt() {
        OwnerToken owner = OwnerToken.random();
        reserve(request(FP, owner).lease(SHORT).willWait());
        reserve(request(FP, OwnerToken.random()).willWait());
        clock.advance(SHORT.plusMillis(1));

        InMemoryIdempotencyStore.StoredRecord record = store.record(scope).orElseThrow();
        assertThat(record.state()).as("a look applies no lapse").isEqualTo(RecordState.IN_FLIGHT);
        assertThat(record.owner()).isEqualTo(owner);
        assertThat(record.waiters()).as("the first reservation took the key, it did not wait").isEqualTo(1);
        assertThat(record.attempts()).isEqualTo(1);
        assertThat(store.size()).isEqualTo(1);
    }

    @Test
    void aForgottenRecordIsRestoredByItsOwner() {
        OwnerToken owner = OwnerToken.random();
        reserve(FP, owner);
        store.forget(scope);

        assertThat(complete(owner, response("kept"))).isEqualTo(CompletionResult.RESTORED);
        assertThat(store.record(scope).orElseThrow().restored()).isTrue();
    }
}
