package dev.retrysafe.gateway.idempotency.observability;

import io.micrometer.tracing.Span;
import io.micrometer.tracing.handler.TracingObservationHandler.TracingContext;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.reactive.observation.ServerRequestObservationContext;
import org.springframework.web.server.ServerWebExchange;

/**
 * Reads the trace id from the server observation WebFlux keeps on the exchange: Micrometer Tracing attaches the
 * request's span to it (continuing an incoming {@code traceparent}). Read from the exchange rather than from a
 * thread-local, which a reactive request does not keep from one operator to the next.
 */
public final class ObservationTraceIds implements TraceIds {

    @Override
    public @Nullable String of(ServerWebExchange exchange) {
        return ServerRequestObservationContext.findCurrent(exchange.getAttributes())
                .map(context -> context.<TracingContext>get(TracingContext.class))
                .map(TracingContext::getSpan)
                .map(Span::context)
                .map(context -> context.traceId())
                .filter(id -> !id.isEmpty())
                .orElse(null);
    }
}
