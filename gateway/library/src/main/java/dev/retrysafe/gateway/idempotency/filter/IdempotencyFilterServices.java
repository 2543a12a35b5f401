package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.observability.RequestReports;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.LeaseRenewals;
import dev.retrysafe.gateway.idempotency.tenant.TenantResolver;
import java.time.Clock;

/**
 * What every route's {@code Idempotency} filter shares on each request, whatever its args: the store and the
 * gateway-wide services around it. The auto-configuration makes one; {@link IdempotencyGatewayFilterFactory} hands
 * it to each route's filter. The workers a route registers with once, at startup, are its {@link RouteWatchers}.
 *
 * @param leases  renews the leases of requests at their upstream
 * @param reports one log line and the metrics per request
 * @param settles the store calls that settle exchanges, counted so that shutdown waits for them
 */
public record IdempotencyFilterServices(IdempotencyStore store, TenantResolver tenants, Clock clock,
        IdempotencyEvents events, LeaseRenewals leases, RequestReports reports, PendingSettles settles) {
}
