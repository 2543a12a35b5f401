package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.filter.IdempotencyFilterServices;
import dev.retrysafe.gateway.idempotency.filter.PendingSettles;
import dev.retrysafe.gateway.idempotency.filter.IdempotencyGatewayFilterFactory;
import dev.retrysafe.gateway.idempotency.filter.RouteWatchers;
import dev.retrysafe.gateway.idempotency.filter.UnguardedGatewayWarning;
import dev.retrysafe.gateway.idempotency.store.LeaseRenewals;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.observability.MeteredIdempotencyStore;
import dev.retrysafe.gateway.idempotency.observability.RequestReports;
import dev.retrysafe.gateway.idempotency.process.ProcessStatusObserver;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import dev.retrysafe.gateway.idempotency.reconcile.Reconciler;
import dev.retrysafe.gateway.idempotency.process.ProcessWatcher;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.tenant.PrincipalOrHeaderTenantResolver;
import dev.retrysafe.gateway.idempotency.tenant.TenantResolver;
import dev.retrysafe.gateway.idempotency.wire.RequestFramingCustomizer;
import java.util.Optional;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.cloud.gateway.config.HttpClientProperties;
import org.springframework.web.reactive.function.client.WebClient;
import java.time.Clock;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;

/**
 * Gives any Spring Cloud Gateway application the {@code Idempotency} route filter once the library is on its
 * classpath: the filter factory with its route defaults, the tenant resolver, process tracking and the request
 * framing guard.
 */
@AutoConfiguration(after = {IdempotencyStoreAutoConfiguration.class, IdempotencyObservabilityAutoConfiguration.class})
@ConditionalOnClass({GatewayFilterFactory.class, ReactiveRedisConnectionFactory.class})
@EnableConfigurationProperties(IdempotencyProperties.class)
public class IdempotencyFilterAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    TenantResolver idempotencyTenantResolver(IdempotencyProperties properties) {
        return new PrincipalOrHeaderTenantResolver(properties.tenantHeader());
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

    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    ProcessWatcher idempotencyProcessWatcher(IdempotencyStore store, ObjectProvider<ProcessQueue> queue,
            IdempotencyProperties properties, ObjectProvider<WebClient.Builder> webClients) {
        WebClient http = webClients.getIfAvailable(WebClient::builder).build();
        return new ProcessWatcher(store, Optional.ofNullable(queue.getIfAvailable()), http,
                properties.processPoll().initialDelay(), properties.processPoll().maxDelay(),
                properties.processPoll().restoreInterval(), ProcessWatcher.ROUND_LIMIT);
    }

    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    Reconciler idempotencyReconciler(ObjectProvider<ReconcileQueue> queue, IdempotencyProperties properties,
            ObjectProvider<WebClient.Builder> webClients, IdempotencyMetrics metrics) {
        WebClient http = webClients.getIfAvailable(WebClient::builder).build();
        IdempotencyProperties.Reconcile reconcile = properties.reconcile();
        return new Reconciler(Optional.ofNullable(queue.getIfAvailable()), http, reconcile.interval(),
                reconcile.retryDelay(), reconcile.maxRetryDelay(), properties.storeTimeout(), reconcile.restoreInterval(),
                metrics);
    }

    @Bean
    @ConditionalOnBean(ProcessWatcher.class)
    ProcessStatusObserver idempotencyProcessStatusObserver(ProcessWatcher watcher, IdempotencyProperties properties,
            IdempotencyEvents events) {
        return new ProcessStatusObserver(watcher, properties.storeTimeout(), events);
    }

    /** Shutdown waits for the store calls of exchanges whose clients have their answers, one settle deadline. */
    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    PendingSettles idempotencyPendingSettles(IdempotencyProperties properties) {
        return new PendingSettles(properties.storeTimeout().multipliedBy(3));
    }

    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    IdempotencyFilterServices idempotencyFilterServices(IdempotencyStore store, IdempotencyMetrics metrics,
            TenantResolver tenants, IdempotencyEvents events, LeaseRenewals leases, RequestReports reports,
            PendingSettles settles) {
        return new IdempotencyFilterServices(new MeteredIdempotencyStore(store, metrics), tenants,
                Clock.systemDefaultZone(), events, leases, reports, settles);
    }

    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    IdempotencyGatewayFilterFactory idempotencyGatewayFilterFactory(IdempotencyProperties properties,
            IdempotencyFilterServices services, ProcessWatcher processes, ProcessStatusObserver statusObserver,
            Reconciler reconciler, ObjectProvider<HttpClientProperties> httpClient) {
        return new IdempotencyGatewayFilterFactory(properties, services,
                new RouteWatchers(processes, statusObserver, Optional.of(reconciler)),
                Optional.ofNullable(httpClient.getIfAvailable()).map(HttpClientProperties::getResponseTimeout));
    }

    /** One WARN when the gateway has no route using the filter: it would forward every write unguarded. */
    @Bean
    UnguardedGatewayWarning idempotencyUnguardedGatewayWarning() {
        return new UnguardedGatewayWarning();
    }

    /**
     * Unknown idempotency.* properties and Idempotency route args (unless idempotency.fail-on-unknown-settings is
     * false), and route settings that break a rule, fail the startup before any bean is created.
     */
    @Bean
    static SettingsCheck idempotencySettingsCheck(Environment environment) {
        return new SettingsCheck(environment);
    }
}
