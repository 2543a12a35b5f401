package dev.retrysafe.gateway.idempotency.store;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;

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
        return Mono.defer(() -> attempt(System.nanoTime() + span.toNanos(), FIRST_RETRY, timeout, call));
    }

    /**
     * One attempt, and the next one only once this one failed: a call that answers the first time (nearly all of
     * them) assembles no retry machinery. The delay before the next attempt is jittered by half either way, as
     * Reactor's {@code Retry.backoff} does, so that instances do not retry in step against a Redis coming back.
     */
    private static <T> Mono<T> attempt(long giveUpAt, Duration delay, Duration timeout, Supplier<Mono<T>> call) {
        return within(timeout, call).onErrorResume(failure -> System.nanoTime() - giveUpAt >= 0
                ? Mono.error(failure)
                : Mono.delay(jittered(delay)).then(Mono.defer(() -> attempt(giveUpAt,
                        min(delay.multipliedBy(2), MAX_RETRY_DELAY), timeout, call))));
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private static Duration jittered(Duration delay) {
        long half = delay.toNanos() / 2;
        return Duration.ofNanos(delay.toNanos() + ThreadLocalRandom.current().nextLong(-half, half + 1));
    }
}
