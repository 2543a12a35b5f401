package dev.retrysafe.gateway.tracing;

import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.handler.TracingObservationHandler.TracingContext;
import io.micrometer.tracing.propagation.Propagator;
import org.springframework.cloud.gateway.filter.headers.HttpHeadersFilter;
import org.springframework.http.HttpHeaders;
import org.springframework.http.server.reactive.observation.ServerRequestObservationContext;
import org.springframework.web.server.ServerWebExchange;

/**
 * Writes the request's own span (the server observation WebFlux keeps on the exchange, continuing an incoming
 * {@code traceparent}) into the headers sent upstream, sampled or not, so the upstream joins the gateway's trace.
 * Spring Cloud Gateway's observability does this by starting a client observation per proxied call, with its own span
 * and timer: measured at about 25-30 us of CPU per request on the server's plain route (docs/benchmarks.md). The
 * shipped configuration turns that off ({@code spring.cloud.gateway.server.webflux.observability.enabled: false})
 * and this filter takes its place: one trace, one timer per request ({@code http.server.requests}).
 */
final class UpstreamTraceContext implements HttpHeadersFilter {
    private final Propagator propagator;

    UpstreamTraceContext(Propagator propagator) {
        this.propagator = propagator;
    }

    @Override
    public HttpHeaders filter(HttpHeaders input, ServerWebExchange exchange) {
        TraceContext context = ServerRequestObservationContext.findCurrent(exchange.getAttributes())
                .map(observation -> observation.<TracingContext>get(TracingContext.class))
                .map(TracingContext::getSpan)
                .map(Span::context)
                .orElse(null);
        if (context == null || context.traceId().isEmpty()) {
            return input;
        }
        HttpHeaders sent = HttpHeaders.copyOf(input);
        propagator.inject(context, sent, HttpHeaders::set);
        return sent;
    }
}
