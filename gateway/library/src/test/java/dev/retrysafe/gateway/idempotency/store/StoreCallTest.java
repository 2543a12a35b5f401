package dev.retrysafe.gateway.idempotency.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

class StoreCallTest {
    static final Duration SHORT = Duration.ofMillis(100);
    static final Duration TEST_BOUND = Duration.ofSeconds(20);

    @Test
    void aCallWhoseSourceNeverSubscribesTimesOut() {
        // Reactor's timeout() would wait for onSubscribe forever here.
        Mono<String> silent = Mono.from(subscriber -> { });

        assertThat(StoreCall.within(SHORT, () -> silent).onErrorReturn(TimeoutException.class, "timed out")
                .block(TEST_BOUND)).isEqualTo("timed out");
    }

    @Test
    void aCallThatBlocksWhileSubscribingTimesOutWhileItStillBlocks() throws InterruptedException {
        // As a connection opened synchronously, under a lock, on first use.
        CountDownLatch connected = new CountDownLatch(1);
        Mono<String> blocking = Mono.from(subscriber -> {
            try {
                connected.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            assertThat(StoreCall.within(SHORT, () -> blocking).subscribeOn(Schedulers.boundedElastic())
                    .onErrorReturn(TimeoutException.class, "timed out").block(TEST_BOUND)).isEqualTo("timed out");
        } finally {
            connected.countDown();
        }
    }

    @Test
    void anAnswerInTimeIsPassedOn() {
        assertThat(StoreCall.within(Duration.ofSeconds(10), () -> Mono.just("answer")).block(TEST_BOUND))
                .isEqualTo("answer");
    }

    @Test
    void aCallRetriedForASpanAnswersOnceTheStoreDoes() {
        AtomicInteger calls = new AtomicInteger();

        String answer = StoreCall.retriedFor(Duration.ofSeconds(15), SHORT, () -> calls.incrementAndGet() <= 5
                ? Mono.error(new IllegalStateException("Redis is away")) : Mono.just("answer")).block(TEST_BOUND);

        assertThat(answer).isEqualTo("answer");
        assertThat(calls).hasValue(6);
    }

    @Test
    void aCallRetriedForASpanGivesUpOnceTheSpanHasPassed() {
        AtomicInteger calls = new AtomicInteger();

        assertThatThrownBy(() -> StoreCall.retriedFor(Duration.ofMillis(300), SHORT, () -> {
            calls.incrementAndGet();
            return Mono.<String>never();
        }).block(TEST_BOUND)).hasCauseInstanceOf(TimeoutException.class);
        assertThat(calls.get()).isGreaterThan(1);
    }
}
