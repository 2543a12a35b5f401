package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.process.ProcessStatusObserver;
import dev.retrysafe.gateway.idempotency.process.ProcessWatcher;
import dev.retrysafe.gateway.idempotency.reconcile.Reconciler;
import java.util.Optional;

/**
 * The background workers that settle a route's records after its answers, which {@link
 * IdempotencyGatewayFilterFactory} registers a route with when it builds its filter (no request sees them).
 *
 * @param processes      polls the processes of the routes that track them
 * @param statusObserver sees status reads of those processes pass through the gateway
 * @param reconciler     looks up the UNCERTAIN records of routes with a {@code reconcile-uri}; empty: none may have one
 */
public record RouteWatchers(ProcessWatcher processes, ProcessStatusObserver statusObserver,
        Optional<Reconciler> reconciler) {
}
