package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.observability.RequestReport;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.web.server.ServerWebExchange;

/**
 * One guarded request, once its whole body is read: what the reservation loop and the upstream exchange know of it.
 * Per request; what the route gives every request is {@link GuardedRoute}.
 *
 * @param owner    this request's token on the record it reserves
 * @param body     the request body as received, forwarded as is
 * @param upstream the route's upstream URI, kept with the record
 * @param report   the request's log line and metrics, filled in as it goes
 */
record GuardedRequest(ServerWebExchange exchange, GatewayFilterChain chain, IdempotencyScope scope, OwnerToken owner,
        Fingerprints fingerprints, byte[] body, String upstream, RequestReport report) {

    String method() {
        return exchange.getRequest().getMethod().name();
    }

    /** The raw path, as sent: kept with the record for operators. */
    String path() {
        return exchange.getRequest().getURI().getRawPath();
    }
}
