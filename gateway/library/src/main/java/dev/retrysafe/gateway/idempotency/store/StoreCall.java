package dev.retrysafe.gateway.idempotency.store;

import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * A store call bounded from the moment it is asked. Reactor's {@code timeout(Duration)} starts its timer only when
 * the source calls {@code onSubscribe}: a source that never does, or that blocks while subscribing (a connection
 * opened on first use, under a lock), escapes it. Here the timer is subscribed first, on its own scheduler, and the
 * first signal wins: the caller hears a {@link TimeoutException} when the time is up, whatever the call does.
 */
public final class StoreCall {
    private static final Duration FIRST_RETRY = Duration.ofMillis(50);
    private static final Duration MAX_RETRY_DELAY = Duration.ofSeconds(1);

    private StoreCall() {
    }

    /** The call's answer, or a {@link TimeoutException} once {@code timeout} has passed since this was subscribed. */
    public static <T> Mono<T> within(Duration timeout, Supplier<Mono<T>> call) {
        return Mono.firstWithSignal(
                Mono.delay(timeout).then(Mono.error(() -> new TimeoutException(
                        "no answer from the store within " + timeout.toMillis() + " ms"))),
                Mono.defer(call));
    }

    /**
     * The call, each attempt {@link #within bounded} by {@code timeout}, tried again (50 ms, doubling to 1 s) until
     * it answers or {@code span} has passed since this was subscribed; then the last attempt's error.
     */
    public static <T> Mono<T> retriedFor(Duration span, Duration timeout, Supplier<Mono<T>> call) {
        return Mono.defer(() -> {
            long giveUpAt = System.nanoTime() + span.toNanos();
            return within(timeout, call).retryWhen(Retry.backoff(Long.MAX_VALUE, FIRST_RETRY)
                    .maxBackoff(MAX_RETRY_DELAY)
                    .filter(e -> System.nanoTime() - giveUpAt < 0));
        });
    }
}
