package dev.retrysafe.gateway.idempotency.observability;

import org.jspecify.annotations.Nullable;
import org.springframework.web.server.ServerWebExchange;

/** Where the request log line finds the request's trace id. One method, so that any tracer can be plugged in. */
@FunctionalInterface
public interface TraceIds {
    /** Without a tracer there is no trace id; the log line shows {@code traceId=-}. */
    TraceIds NONE = exchange -> null;

    /** The trace id of the request's server span, or null when there is none. */
    @Nullable String of(ServerWebExchange exchange);
}
