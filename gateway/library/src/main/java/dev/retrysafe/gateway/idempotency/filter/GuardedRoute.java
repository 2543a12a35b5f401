package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.response.GatewayResponses;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.LeaseRenewals;
import java.time.Clock;

/**
 * What one route's filter gives each of its requests: the route's policy and the collaborators its requests share.
 * Made once per route, when Spring Cloud Gateway builds it; per request is {@link GuardedRequest}.
 *
 * @param responses the answers the gateway writes itself, in the route's contract
 * @param settles   the store calls settling exchanges, which shutdown waits for
 */
record GuardedRoute(RoutePolicy policy, IdempotencyStore store, IdempotencyEvents events, LeaseRenewals leases,
        GatewayResponses responses, Clock clock, PendingSettles settles) {
}
