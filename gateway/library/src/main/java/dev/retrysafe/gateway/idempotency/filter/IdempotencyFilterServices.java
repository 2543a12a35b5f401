package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.observability.RequestReports;
import dev.retrysafe.gateway.idempotency.process.ProcessStatusObserver;
import dev.retrysafe.gateway.idempotency.process.ProcessWatcher;
import dev.retrysafe.gateway.idempotency.reconcile.Reconciler;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.LeaseRenewals;
import dev.retrysafe.gateway.idempotency.tenant.TenantResolver;
import java.time.Clock;
import java.util.Optional;

/**
 * What every route's {@code Idempotency} filter shares, whatever its args: the store and the gateway-wide services
 * around it. The auto-configuration makes one; {@link IdempotencyGatewayFilterFactory} hands each route what it needs.
 *
 * @param processes      polls the processes of the routes that track them
 * @param statusObserver sees status reads of those processes pass through the gateway
 * @param leases         renews the leases of requests at their upstream
 * @param reports        one log line and the metrics per request
 * @param reconciler     looks up the UNCERTAIN records of routes with a {@code reconcile-uri}; empty: none may have one
 */
public record IdempotencyFilterServices(IdempotencyStore store, TenantResolver tenants, Clock clock,
        IdempotencyEvents events, ProcessWatcher processes, ProcessStatusObserver statusObserver, LeaseRenewals leases,
        RequestReports reports, Optional<Reconciler> reconciler) {
}
