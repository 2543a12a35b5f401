package dev.retrysafe.gateway.idempotency.store;

import reactor.core.publisher.Mono;

/** A registration for the moment an in-flight record is completed or released. */
public interface SettleWaiter extends AutoCloseable {

    /** Completes when the record settles. Never errors; callers bound it with their own timeout. */
    Mono<Void> settled();

    /**
     * Completes once a settle from now on, by any instance, reaches this waiter: at once where the wake-up channel
     * is always listened to, after the subscription to the record's shard channel is acknowledged where it is
     * taken for the waiter. Never errors; a subscription that failed completes it too, and only the caller's timeout
     * then notices a settle of another instance.
     */
    default Mono<Void> listening() {
        return Mono.empty();
    }

    @Override
    void close();
}
