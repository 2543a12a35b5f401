package dev.retrysafe.gateway.idempotency.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

class SettleSignalsTest {

    private static final Duration LIMIT = Duration.ofSeconds(5);
    private static final String HASH = "scope-hash-1";

    private final SettleSignals signals = new SettleSignals();

    @Test
    void aRegisteredWaiterIsReleasedBySignalForItsHash() {
        try (SettleWaiter waiter = signals.register(HASH)) {
            StepVerifier.create(waiter.settled())
                    .expectSubscription()
                    .expectNoEvent(Duration.ofMillis(50))
                    .then(() -> signals.signal(HASH))
                    .expectComplete()
                    .verify(LIMIT);
        }
    }

    @Test
    void aWaiterSubscribingAfterTheSignalSeesItCompleted() {
        try (SettleWaiter waiter = signals.register(HASH)) {
            signals.signal(HASH);

            StepVerifier.create(waiter.settled()).expectComplete().verify(LIMIT);
        }
    }

    @Test
    void aSignalForAnotherHashDoesNotReleaseIt() {
        try (SettleWaiter waiter = signals.register(HASH)) {
            StepVerifier.create(waiter.settled())
                    .expectSubscription()
                    .then(() -> signals.signal("scope-hash-2"))
                    .expectNoEvent(Duration.ofMillis(100))
                    .thenCancel()
                    .verify(LIMIT);

            assertThat(signals.waitingScopes()).isEqualTo(1);
        }
    }

    @Test
    void twoWaitersOnOneHashAreBothReleased() {
        try (SettleWaiter first = signals.register(HASH); SettleWaiter second = signals.register(HASH)) {
            assertThat(signals.waitingScopes()).isEqualTo(1);

            StepVerifier.create(Mono.when(first.settled(), second.settled()))
                    .expectSubscription()
                    .expectNoEvent(Duration.ofMillis(50))
                    .then(() -> signals.signal(HASH))
                    .expectComplete()
                    .verify(LIMIT);
        }
    }

    @Test
    void closingEveryWaiterLeavesNoScopeBehind() {
        SettleWaiter a1 = signals.register("a");
        SettleWaiter a2 = signals.register("a");
        SettleWaiter b = signals.register("b");
        assertThat(signals.waitingScopes()).isEqualTo(2);

        a1.close();
        assertThat(signals.waitingScopes()).as("a still has a waiter").isEqualTo(2);
        b.close();
        assertThat(signals.waitingScopes()).isEqualTo(1);
        a2.close();
        assertThat(signals.waitingScopes()).isZero();
    }

    @Test
    void closingTwiceDoesNotReleaseAnotherWaitersHold() {
        SettleWaiter first = signals.register(HASH);
        SettleWaiter second = signals.register(HASH);

        first.close();
        assertThatCode(first::close).doesNotThrowAnyException();

        assertThat(signals.waitingScopes()).as("second still waits").isEqualTo(1);
        StepVerifier.create(second.settled())
                .expectSubscription()
                .then(() -> signals.signal(HASH))
                .expectComplete()
                .verify(LIMIT);
        second.close();
        second.close();
        assertThat(signals.waitingScopes()).isZero();
    }

    @Test
    void aSignalRemovesTheScopeAndLateClosesAreHarmless() {
        SettleWaiter waiter = signals.register(HASH);

        signals.signal(HASH);
        assertThat(signals.waitingScopes()).isZero();

        waiter.close();
        assertThat(signals.waitingScopes()).isZero();
    }

    @Test
    void aCloseAfterTheSignalDoesNotTouchANewerRegistrationForTheSameHash() {
        SettleWaiter old = signals.register(HASH);
        signals.signal(HASH);
        SettleWaiter fresh = signals.register(HASH);

        old.close();

        assertThat(signals.waitingScopes()).isEqualTo(1);
        StepVerifier.create(fresh.settled())
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(50))
                .then(() -> signals.signal(HASH))
                .expectComplete()
                .verify(LIMIT);
        fresh.close();
        assertThat(signals.waitingScopes()).isZero();
    }

    @Test
    void aSignalWithNoWaitersIsANoOp() {
        assertThatCode(() -> signals.signal("nobody-waits")).doesNotThrowAnyException();
        assertThat(signals.waitingScopes()).isZero();

        // and it is not remembered: a later waiter is not released by it
        try (SettleWaiter waiter = signals.register("nobody-waits")) {
            StepVerifier.create(waiter.settled())
                    .expectSubscription()
                    .expectNoEvent(Duration.ofMillis(50))
                    .thenCancel()
                    .verify(LIMIT);
        }
    }

    @Test
    void aThousandWaitersOnOneHashAreAllReleasedByOneSignal() {
        List<SettleWaiter> waiters = new ArrayList<>();
        AtomicInteger completed = new AtomicInteger();
        for (int i = 0; i < 1000; i++) {
            SettleWaiter waiter = signals.register(HASH);
            waiters.add(waiter);
            waiter.settled().subscribe(null, null, completed::incrementAndGet);
        }
        assertThat(signals.waitingScopes()).isEqualTo(1);
        assertThat(completed).hasValue(0);

        signals.signal(HASH);

        assertThat(completed).hasValue(1000);
        waiters.forEach(SettleWaiter::close);
        assertThat(signals.waitingScopes()).isZero();
    }

    @Test
    void aThousandWaitersClosedWithoutASignalLeaveNothingBehind() {
        List<SettleWaiter> waiters = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            waiters.add(signals.register(HASH));
        }

        waiters.forEach(SettleWaiter::close);

        assertThat(signals.waitingScopes()).isZero();
    }
}
