package dev.retrysafe.gateway.idempotency.support;

import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.UncertainMark;
import java.time.Duration;
import reactor.core.publisher.Mono;

/** A store that passes every call on: a test overrides the calls it makes fail, late or silent. */
public class ForwardingStore implements IdempotencyStore {
    protected final IdempotencyStore delegate;

    public ForwardingStore(IdempotencyStore delegate) {
        this.delegate = delegate;
    }

    @Override
    public Mono<Reservation> reserve(ReservationRequest request) {
        return delegate.reserve(request);
    }

    @Override
    public Mono<Boolean> renew(IdempotencyScope scope, OwnerToken owner, Duration lease) {
        return delegate.renew(scope, owner, lease);
    }

    @Override
    public Mono<CompletionResult> complete(Completion completion) {
        return delegate.complete(completion);
    }

    @Override
    public Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner) {
        return delegate.release(scope, owner);
    }

    @Override
    public Mono<SettleResult> markUncertain(UncertainMark mark) {
        return delegate.markUncertain(mark);
    }

    @Override
    public Mono<Boolean> processEnded(String routeId, String processId, String terminalValue, Duration retention) {
        return delegate.processEnded(routeId, processId, terminalValue, retention);
    }

    @Override
    public SettleWaiter awaitSettle(IdempotencyScope scope) {
        return delegate.awaitSettle(scope);
    }
}
