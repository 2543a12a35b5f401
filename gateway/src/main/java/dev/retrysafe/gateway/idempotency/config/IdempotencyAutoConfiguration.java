package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.filter.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.filter.IdempotencyGatewayFilterFactory;
import dev.retrysafe.gateway.idempotency.filter.LeaseRenewals;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.observability.MeteredIdempotencyStore;
import dev.retrysafe.gateway.idempotency.observability.ObservationTraceIds;
import dev.retrysafe.gateway.idempotency.observability.RecordCountSampler;
import dev.retrysafe.gateway.idempotency.observability.RequestReports;
import dev.retrysafe.gateway.idempotency.observability.TraceIds;
import dev.retrysafe.gateway.idempotency.operator.IdempotencyOperatorEndpoint;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.process.ProcessStatusObserver;
import dev.retrysafe.gateway.idempotency.process.ProcessWatcher;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisRecordInspector;
import dev.retrysafe.gateway.idempotency.store.redis.RedisSettleSubscription;
import dev.retrysafe.gateway.idempotency.store.redis.ReplicaAcks;
import dev.retrysafe.gateway.idempotency.store.redis.RedisStoreHealthIndicator;
import dev.retrysafe.gateway.idempotency.tenant.PrincipalOrHeaderTenantResolver;
import dev.retrysafe.gateway.idempotency.tenant.TenantResolver;
import dev.retrysafe.gateway.idempotency.wire.RequestFramingCustomizer;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.cloud.gateway.config.HttpClientProperties;
import org.springframework.web.reactive.function.client.WebClient;
import java.time.Clock;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.data.redis.autoconfigure.ClientResourcesBuilderCustomizer;
import org.springframework.boot.data.redis.autoconfigure.LettuceClientOptionsBuilderCustomizer;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;

/**
 * Gives any Spring Cloud Gateway application the {@code Idempotency} route filter once this module is on its
 * classpath, on the Redis configured through the standard {@code spring.data.redis.*} properties.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
        "org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration"})
@ConditionalOnClass({GatewayFilterFactory.class, ReactiveRedisConnectionFactory.class})
@EnableConfigurationProperties({IdempotencyProperties.class, EncryptionProperties.class})
public class IdempotencyAutoConfiguration {

    /**
     * Lettuce queues commands while disconnected by default, and would run a reservation long after the client was
     * told 503: failing fast while Redis is away keeps "refused" meaning "nothing happened". And by default every
     * reply continues the request's reactive chain on Lettuce's single connection thread, so all guarded requests
     * would be forwarded and answered from one thread: replies are published on Lettuce's computation threads.
     */
    @Bean
    LettuceClientOptionsBuilderCustomizer idempotencyLettuceOptions() {
        return options -> options.disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .publishOnScheduler(true);
    }

    /**
     * Lettuce's default reconnect back-off grows to 30 s, so a Redis that was away for a few seconds could leave
     * the gateway refusing requests for half a minute after it is back. Capped at 1 s: recovery within seconds.
     */
    @Bean
    ClientResourcesBuilderCustomizer idempotencyFastRedisReconnect() {
        return resources -> resources.reconnectDelay(
                Delay.exponential(Duration.ofMillis(50), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS));
    }

    @Bean
    @ConditionalOnMissingBean
    TenantResolver idempotencyTenantResolver(IdempotencyProperties properties) {
        return new PrincipalOrHeaderTenantResolver(properties.tenantHeader());
    }

    /** Off unless {@code idempotency.encryption.active-key} is set. */
    @Bean
    @ConditionalOnMissingBean
    EncryptionKeys idempotencyEncryptionKeys(EncryptionProperties encryption) {
        EncryptionKeys keys = encryption.toKeys();
        if (keys.enabled()) {
            LoggerFactory.getLogger(IdempotencyAutoConfiguration.class).info("Stored responses are encrypted: {}", keys);
        }
        return keys;
    }

    @Bean
    SettleSignals idempotencySettleSignals() {
        return new SettleSignals();
    }

    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    @ConditionalOnMissingBean(IdempotencyStore.class)
    RedisIdempotencyStore idempotencyStore(ReactiveRedisConnectionFactory connectionFactory, SettleSignals signals,
            IdempotencyProperties properties, EncryptionKeys encryption) {
        return new RedisIdempotencyStore(bytesTemplate(connectionFactory), signals,
                (int) Math.min(Integer.MAX_VALUE, properties.compressStoredBodiesAbove().toBytes()), encryption,
                replicaAcks(connectionFactory, properties));
    }

    private static Optional<ReplicaAcks> replicaAcks(ReactiveRedisConnectionFactory connectionFactory,
            IdempotencyProperties properties) {
        if (properties.replicaAcks() == 0) {
            return Optional.empty();
        }
        if (!(connectionFactory instanceof LettuceConnectionFactory lettuce)) {
            throw new IllegalStateException("idempotency.replica-acks needs the Lettuce Redis client");
        }
        return Optional.of(ReplicaAcks.on(lettuce, properties.replicaAcks(), properties.replicaAckTimeout(),
                properties.replicaAckConnections()));
    }

    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    @ConditionalOnMissingBean(RecordInspector.class)
    RedisRecordInspector idempotencyRecordInspector(ReactiveRedisConnectionFactory connectionFactory,
            SettleSignals signals, EncryptionKeys encryption) {
        return new RedisRecordInspector(bytesTemplate(connectionFactory), signals, encryption);
    }

    @Bean
    @ConditionalOnBean(RecordInspector.class)
    @ConditionalOnAvailableEndpoint(endpoint = IdempotencyOperatorEndpoint.class)
    IdempotencyOperatorEndpoint idempotencyOperatorEndpoint(RecordInspector inspector, IdempotencyProperties properties) {
        return new IdempotencyOperatorEndpoint(inspector, properties.retention());
    }

    private static ReactiveRedisTemplate<String, byte[]> bytesTemplate(ReactiveRedisConnectionFactory connections) {
        RedisSerializationContext<String, byte[]> context = RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray())
                .key(RedisSerializer.string())
                .hashKey(RedisSerializer.string())
                .build();
        return new ReactiveRedisTemplate<>(connections, context);
    }

    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    RedisSettleSubscription idempotencySettleSubscription(ReactiveRedisConnectionFactory connectionFactory,
            SettleSignals signals) {
        return new RedisSettleSubscription(connectionFactory, signals);
    }

    @Bean
    IdempotencyEvents idempotencyEvents(ObjectProvider<MeterRegistry> meters) {
        return new IdempotencyEvents(meters.getIfAvailable(() -> Metrics.globalRegistry));
    }

    @Bean
    IdempotencyMetrics idempotencyMetrics(ObjectProvider<MeterRegistry> meters) {
        return new IdempotencyMetrics(meters.getIfAvailable(() -> Metrics.globalRegistry));
    }

    /**
     * Requests reach the gateway only as they were framed: a body whose chunked framing breaks ends in an error
     * instead of looking complete, and a Transfer-Encoding other than {@code chunked} is refused. On every route,
     * since a plain route would otherwise forward what a guarded one refuses.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.springframework.boot.reactor.netty.NettyServerCustomizer",
            "reactor.netty.http.server.HttpServer"})
    static class RequestFramingConfiguration {
        @Bean
        RequestFramingCustomizer idempotencyRequestFraming() {
            return new RequestFramingCustomizer(Clock.systemDefaultZone());
        }
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

    @Bean
    @ConditionalOnBean(RecordInspector.class)
    @ConditionalOnProperty(name = "idempotency.record-counts.enabled", matchIfMissing = true)
    RecordCountSampler idempotencyRecordCountSampler(RecordInspector inspector, IdempotencyMetrics metrics,
            IdempotencyProperties properties) {
        return new RecordCountSampler(inspector, metrics.registry(), properties.recordCounts().interval(),
                properties.recordCounts().pendingAfter(), properties.recordCounts().maxRecords());
    }

    /**
     * Health component {@code idempotencyStore}; {@code management.health.idempotency-store.enabled=false} drops
     * it.
     */
    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    @ConditionalOnEnabledHealthIndicator("idempotency-store")
    RedisStoreHealthIndicator idempotencyStoreHealthIndicator(ReactiveRedisConnectionFactory connectionFactory,
            IdempotencyProperties properties) {
        String whileDown = properties.storeUnavailable() == IdempotencyProperties.StoreUnavailable.FORWARD
                ? "forwarded unprotected, each one logged and counted (idempotency.store-unavailable=forward)"
                : "refused with 503 and Retry-After, nothing forwarded (idempotency.store-unavailable=reject)";
        return new RedisStoreHealthIndicator(bytesTemplate(connectionFactory), properties.storeTimeout(), whileDown);
    }

    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    ProcessWatcher idempotencyProcessWatcher(IdempotencyStore store, IdempotencyProperties properties,
            ObjectProvider<WebClient.Builder> webClients) {
        WebClient http = webClients.getIfAvailable(WebClient::builder).build();
        return new ProcessWatcher(store, http, properties.processPoll().initialDelay(),
                properties.processPoll().maxDelay());
    }

    @Bean
    @ConditionalOnBean(ProcessWatcher.class)
    ProcessStatusObserver idempotencyProcessStatusObserver(ProcessWatcher watcher, IdempotencyProperties properties,
            IdempotencyEvents events) {
        return new ProcessStatusObserver(watcher, properties.storeTimeout(), events);
    }

    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    LeaseRenewals idempotencyLeaseRenewals(IdempotencyStore store) {
        return new LeaseRenewals(store, Duration.ofMillis(50));
    }

    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    IdempotencyGatewayFilterFactory idempotencyGatewayFilterFactory(IdempotencyProperties properties,
            IdempotencyStore store, TenantResolver tenants, IdempotencyEvents events, ProcessWatcher processes,
            ProcessStatusObserver statusObserver, LeaseRenewals leases, IdempotencyMetrics metrics,
            RequestReports reports, ObjectProvider<HttpClientProperties> httpClient) {
        return new IdempotencyGatewayFilterFactory(properties, new MeteredIdempotencyStore(store, metrics), tenants,
                Clock.systemDefaultZone(), events, processes, statusObserver, leases, reports,
                Optional.ofNullable(httpClient.getIfAvailable()).map(HttpClientProperties::getResponseTimeout));
    }
}
