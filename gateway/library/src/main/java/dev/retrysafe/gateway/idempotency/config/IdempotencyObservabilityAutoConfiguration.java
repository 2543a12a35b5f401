package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.observability.ObservationTraceIds;
import dev.retrysafe.gateway.idempotency.observability.RequestReports;
import dev.retrysafe.gateway.idempotency.observability.TraceIds;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;

/**
 * What the filter reports: its meters, events and the request log line (with the trace id when the application
 * has a tracer).
 */
@AutoConfiguration
@ConditionalOnClass({GatewayFilterFactory.class, ReactiveRedisConnectionFactory.class})
public class IdempotencyObservabilityAutoConfiguration {

    @Bean
    IdempotencyEvents idempotencyEvents(ObjectProvider<MeterRegistry> meters) {
        return new IdempotencyEvents(meters.getIfAvailable(() -> Metrics.globalRegistry));
    }

    @Bean
    IdempotencyMetrics idempotencyMetrics(ObjectProvider<MeterRegistry> meters) {
        return new IdempotencyMetrics(meters.getIfAvailable(() -> Metrics.globalRegistry));
    }

    /** Trace ids for the request log line when Micrometer Tracing is on the classpath. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.tracing.handler.TracingObservationHandler")
    static class TracingConfiguration {
        @Bean
        @ConditionalOnMissingBean
        TraceIds idempotencyTraceIds() {
            return new ObservationTraceIds();
        }
    }

    @Bean
    @ConditionalOnMissingBean
    TraceIds idempotencyNoTraceIds() {
        return TraceIds.NONE;
    }

    @Bean
    RequestReports idempotencyRequestReports(IdempotencyMetrics metrics, TraceIds traceIds) {
        return new RequestReports(metrics, traceIds);
    }
}
