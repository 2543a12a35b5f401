package dev.retrysafe.gateway.idempotency.store;

import reactor.core.publisher.Mono;

/** A registration for the moment an in-flight record is completed or released. */
public interface SettleWaiter extends AutoCloseable {

    /** Completes when the record settles. Never errors; callers bound it with their own timeout. */
    Mono<Void> settled();

    @Override
    void close();
}
