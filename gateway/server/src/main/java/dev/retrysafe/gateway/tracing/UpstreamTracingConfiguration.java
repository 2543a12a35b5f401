package dev.retrysafe.gateway.tracing;

import io.micrometer.tracing.propagation.Propagator;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.cloud.gateway.filter.headers.HttpHeadersFilter;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The upstream joins the request's trace when Spring Cloud Gateway's own observability, which would otherwise do it,
 * is off ({@link UpstreamTraceContext}).
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "spring.cloud.gateway.server.webflux.observability.enabled", havingValue = "false")
class UpstreamTracingConfiguration {

    /** Without a tracer (no Propagator bean) there is no trace to carry: nothing is written. */
    @Bean
    HttpHeadersFilter upstreamTraceContext(ObjectProvider<Propagator> propagator) {
        return new UpstreamTraceContext(propagator.getIfAvailable(() -> Propagator.NOOP));
    }
}
