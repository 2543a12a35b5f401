package dev.retrysafe.gateway.idempotency.observability;

import org.springframework.web.server.ServerWebExchange;

/** Starts the {@link RequestReport} of each guarded request. */
public final class RequestReports {
    private final IdempotencyMetrics metrics;
    private final TraceIds traceIds;

    public RequestReports(IdempotencyMetrics metrics, TraceIds traceIds) {
        this.metrics = metrics;
        this.traceIds = traceIds;
    }

    public RequestReport start(ServerWebExchange exchange, String route) {
        return new RequestReport(metrics, exchange, route, traceIds.of(exchange));
    }
}
