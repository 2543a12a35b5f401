package dev.retrysafe.gateway.idempotency.background;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/** The one way background work runs: a round at a time, never stopped by a failed or hung round, restartable. */
class PeriodicRoundsTest {
    static final Duration TICK = Duration.ofMillis(5);
    static final long WAIT_SECONDS = 30;

    @Test
    void aRoundStillRunningIsNeverJoinedByTheNext() throws InterruptedException {
        AtomicInteger running = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        CountDownLatch rounds = new CountDownLatch(5);
        Sinks.Empty<Void> firstRoundEnds = Sinks.empty();
        CountDownLatch firstRoundStarted = new CountDownLatch(1);
        PeriodicRounds work = PeriodicRounds.every("test rounds", Duration.ZERO, TICK, tick -> Mono.defer(() -> {
            mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
            firstRoundStarted.countDown();
            return tick == 0 ? firstRoundEnds.asMono() : Mono.empty();
        // doOnTerminate, not doFinally: a round counts as ended before its end reaches the loop (doFinally runs after,
        // when the loop may already have started the next one, so the test would see two where the loop ran one).
        }).doOnTerminate(() -> {
            running.decrementAndGet();
            rounds.countDown();
        })).queueingOneTick();
        work.start();
        try {
            assertThat(firstRoundStarted.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
            firstRoundEnds.tryEmitEmpty();
            assertThat(rounds.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("rounds go on").isTrue();
        } finally {
            work.stop();
        }
        assertThat(mostAtOnce).hasValue(1);
    }

    @Test
    void aFailedRoundOrOneOverItsBoundIsLeftAndTheNextTickStartsAnother() throws InterruptedException {
        AtomicInteger started = new AtomicInteger();
        CountDownLatch afterBoth = new CountDownLatch(1);
        PeriodicRounds work = PeriodicRounds.every("test rounds", Duration.ZERO, TICK, tick -> {
            int round = started.incrementAndGet();
            if (round == 1) {
                return Mono.error(new IllegalStateException("Redis said no"));
            }
            if (round == 2) {
                return Mono.never();
            }
            afterBoth.countDown();
            return Mono.empty();
        }).boundedBy(Duration.ofMillis(50));
        work.start();
        try {
            assertThat(afterBoth.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        } finally {
            work.stop();
        }
    }

    @Test
    void stoppedItRunsNoRoundAndStartedAgainItRunsThemAgain() throws InterruptedException {
        CountDownLatch first = new CountDownLatch(1);
        CountDownLatch[] next = {first};
        PeriodicRounds work = PeriodicRounds.every("test rounds", Duration.ZERO, TICK, tick -> Mono.fromRunnable(
                () -> next[0].countDown()));
        assertThat(work.isRunning()).isFalse();
        work.start();
        work.start();
        assertThat(first.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        work.stop();
        work.stop();
        assertThat(work.isRunning()).isFalse();

        CountDownLatch again = new CountDownLatch(1);
        next[0] = again;
        work.start();
        try {
            assertThat(work.isRunning()).isTrue();
            assertThat(again.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        } finally {
            work.stop();
        }
    }

    @Test
    void anIntervalMustBePositive() {
        assertThatIllegalArgumentException().isThrownBy(() -> PeriodicRounds.every("test rounds", Duration.ZERO,
                Duration.ZERO, tick -> Mono.empty())).withMessageContaining("test rounds interval must be positive");
    }
}
