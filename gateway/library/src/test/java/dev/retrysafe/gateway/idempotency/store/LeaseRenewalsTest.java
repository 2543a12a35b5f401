package dev.retrysafe.gateway.idempotency.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.support.ForwardingStore;
import dev.retrysafe.gateway.idempotency.support.InMemoryIdempotencyStore;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

class LeaseRenewalsTest {
    static final Duration LEASE = Duration.ofSeconds(6);
    final IdempotencyScope scope = new IdempotencyScope("", "r", new IdempotencyKey("order-7f3a9c1e-0b2d"));
    final OwnerToken owner = OwnerToken.random();
    final InMemoryIdempotencyStore records = new InMemoryIdempotencyStore();
    final List<Long> renewalsAt = new CopyOnWriteArrayList<>();
    final List<Boolean> answers = new CopyOnWriteArrayList<>();
    final AtomicInteger failuresLeft = new AtomicInteger(2);
    LeaseRenewals renewals;

    @AfterEach
    void stop() {
        renewals.destroy();
    }

    @Test
    void aFailedRenewalIsTriedAgainAtTheNextTickNotAThirdOfALeaseLater() {
        renewals = new LeaseRenewals(new ForwardingStore(records) {
            @Override
            public Mono<Boolean> renew(IdempotencyScope scope, OwnerToken owner, Duration lease) {
                renewalsAt.add(System.nanoTime());
                if (failuresLeft.getAndDecrement() > 0) {
                    return Mono.error(new IllegalStateException("Redis is away"));
                }
                return delegate.renew(scope, owner, lease).doOnNext(answers::add);
            }
        }, Duration.ofMillis(50));
        records.reserve(new ReservationRequest(scope, Fingerprints.underNoRules(new Fingerprint("ab".repeat(32))), owner, LEASE, Duration.ofMinutes(5),
                "http://upstream", false, false, "POST", "/merchants", Optional.empty())).block();
        long heldAt = System.nanoTime();

        renewals.hold(scope, owner, LEASE, Duration.ofSeconds(1), new LeaseRenewals.Watch(System::nanoTime,
                () -> Duration.ofMinutes(1), quiet -> { }));
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop().filter(t -> !answers.isEmpty()).next()
                .timeout(Duration.ofSeconds(30), Mono.empty()).block();

        assertThat(answers).as("renewed after two failures").containsExactly(true);
        assertThat(renewalsAt).hasSize(3);
        // Due a third of a lease in; retried a third of a lease later, the third try would come at the lease's
        // end. At the next ticks it comes a little after the first: while two thirds of the lease are left.
        assertThat(Duration.ofNanos(renewalsAt.get(2) - heldAt)).isLessThan(LEASE.multipliedBy(2).dividedBy(3));
    }

    @Test
    void theTickerRunsFromTheFirstLeaseHeldUntilTheBeanIsDestroyed() {
        renewals = new LeaseRenewals(records, Duration.ofMillis(50));
        assertThat(renewals.isTicking()).as("nothing to renew: no ticker built into the constructor").isFalse();

        LeaseRenewals.Hold hold = renewals.hold(scope, owner, LEASE, Duration.ofSeconds(1),
                new LeaseRenewals.Watch(System::nanoTime, () -> Duration.ofMinutes(1), quiet -> { }));
        assertThat(renewals.isTicking()).isTrue();
        hold.release();
        assertThat(renewals.isTicking()).as("kept through a graceful shutdown's drain").isTrue();

        renewals.destroy();
        assertThat(renewals.isTicking()).isFalse();
        renewals.hold(scope, owner, LEASE, Duration.ofSeconds(1),
                new LeaseRenewals.Watch(System::nanoTime, () -> Duration.ofMinutes(1), quiet -> { }));
        assertThat(renewals.isTicking()).as("destroyed: never started again").isFalse();
    }
}
