package dev.retrysafe.gateway.idempotency.observability;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.UncertainMark;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import reactor.core.publisher.Mono;

/**
 * Times the store calls a guarded request waits for ({@code idempotency.store.duration{operation,route,result}}) and
 * measures each stored response ({@code idempotency.stored.response}), for any store. A call the request gave up on
 * (its {@code store-timeout}) ends as {@code result=cancelled}.
 */
public final class MeteredIdempotencyStore implements IdempotencyStore {
    private final IdempotencyStore store;
    private final IdempotencyMetrics metrics;

    public MeteredIdempotencyStore(IdempotencyStore store, IdempotencyMetrics metrics) {
        this.store = store;
        this.metrics = metrics;
    }

    @Override
    public Mono<Reservation> reserve(ReservationRequest request) {
        return timed("reserve", request.scope(), store.reserve(request));
    }

    @Override
    public Mono<Boolean> renew(IdempotencyScope scope, OwnerToken owner, Duration lease) {
        return store.renew(scope, owner, lease);
    }

    @Override
    public Mono<CompletionResult> complete(Completion completion) {
        return timed("complete", completion.scope(), store.complete(completion))
                .doOnNext(result -> {
                    if (result.stored()) {
                        metrics.stored(completion.scope().routeId(), size(completion.response()));
                    }
                });
    }

    @Override
    public Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner) {
        return timed("release", scope, store.release(scope, owner));
    }

    @Override
    public Mono<SettleResult> markUncertain(UncertainMark mark) {
        return timed("mark-uncertain", mark.scope(), store.markUncertain(mark));
    }

    @Override
    public Mono<Boolean> processEnded(String operation, String processId, String terminalValue, Duration retention) {
        return store.processEnded(operation, processId, terminalValue, retention);
    }

    @Override
    public SettleWaiter awaitSettle(IdempotencyScope scope) {
        return store.awaitSettle(scope);
    }

    private <T> Mono<T> timed(String operation, IdempotencyScope scope, Mono<T> call) {
        return Mono.defer(() -> {
            long start = System.nanoTime();
            AtomicBoolean recorded = new AtomicBoolean();
            // The first signal counts: a value cancelled downstream afterwards was still a successful call.
            Consumer<String> record = result -> {
                if (recorded.compareAndSet(false, true)) {
                    metrics.storeCall(operation, scope.routeId(), result, System.nanoTime() - start);
                }
            };
            return call.doOnSuccess(value -> record.accept("ok"))
                    .doOnError(error -> record.accept("error"))
                    .doOnCancel(() -> record.accept("cancelled"));
        });
    }

    /** Status line, headers and body as captured: what the record holds before any compression. */
    static long size(StoredResponse response) {
        long size = 3 + response.body().length;
        for (ResponseHeader header : response.headers()) {
            size += header.name().getBytes(StandardCharsets.UTF_8).length
                    + header.value().getBytes(StandardCharsets.UTF_8).length + 4;
        }
        return size;
    }
}
