package dev.retrysafe.gateway.idempotency.filter;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.context.SmartLifecycle;

class PendingSettlesTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    @Test
    void stoppingWaitsUntilTheLastSettleCallUnderWayEnds() throws Exception {
        PendingSettles settles = new PendingSettles(Duration.ofMinutes(1));
        settles.start();
        settles.begin();
        settles.begin();
        CompletableFuture<Void> stopped = CompletableFuture.runAsync(settles::stop);
        awaitDraining(settles);
        settles.end();
        assertThat(stopped).as("one call still under way").isNotDone();
        assertThat(settles.draining()).isTrue();
        settles.end();
        stopped.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(settles.isRunning()).isFalse();
        assertThat(settles.underWay()).isZero();
    }

    @Test
    void stoppingWithNothingUnderWayReturnsAtOnceAndACallThatNeverEndsIsWaitedForOnlyUpToTheBound() {
        PendingSettles idle = new PendingSettles(Duration.ofHours(1));
        idle.stop();
        assertThat(idle.draining()).isFalse();

        PendingSettles stuck = new PendingSettles(Duration.ofMillis(50));
        stuck.begin();
        long started = System.nanoTime();
        stuck.stop();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isGreaterThanOrEqualTo(Duration.ofMillis(50));
        assertThat(stuck.underWay()).as("left to go on until the store closes").isEqualTo(1);
        assertThat(stuck.awaitNone(Duration.ofMillis(1))).isFalse();
        stuck.end();
        assertThat(stuck.awaitNone(WAIT)).isTrue();
    }

    @Test
    void itStopsAfterTheWebServersGracefulShutdownAndBeforeTheWebServerItself() {
        // Spring Boot's WebServerGracefulShutdownLifecycle and WebServerStartStopLifecycle phases: higher stops first.
        assertThat(new PendingSettles(Duration.ZERO).getPhase())
                .isLessThan(SmartLifecycle.DEFAULT_PHASE - 1024)
                .isGreaterThan(SmartLifecycle.DEFAULT_PHASE - 2048);
    }

    private static void awaitDraining(PendingSettles settles) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!settles.draining()) {
            assertThat(System.nanoTime()).as("stop() waiting").isLessThan(deadline);
            Thread.sleep(1); // poll interval; the condition is checked again
        }
    }
}
