package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.observability.RecordCountSampler;
import dev.retrysafe.gateway.idempotency.operator.IdempotencyOperatorEndpoint;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.store.redis.PreopenedConnections;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisRecordInspector;
import dev.retrysafe.gateway.idempotency.store.redis.RedisWakeUps;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Reading and settling records: the operator endpoint, and the record-count gauges that read the records the same
 * way.
 */
@AutoConfiguration(after = {IdempotencyStoreAutoConfiguration.class, IdempotencyObservabilityAutoConfiguration.class})
@ConditionalOnClass({GatewayFilterFactory.class, ReactiveRedisConnectionFactory.class})
@EnableConfigurationProperties(IdempotencyProperties.class)
public class IdempotencyOperatorAutoConfiguration {

    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    @ConditionalOnMissingBean(RecordInspector.class)
    RedisRecordInspector idempotencyRecordInspector(ReactiveRedisConnectionFactory connectionFactory,
            PreopenedConnections connections, RedisWakeUps wakeUps, EncryptionKeys encryption,
            IdempotencyProperties properties) {
        // On a Cluster a script may touch one slot (one master, flagged, on Redis 7+): the index is read by master.
        boolean cluster = connectionFactory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
        return new RedisRecordInspector(connections::store, connections.template(), wakeUps,
                encryption, cluster, RedisIdempotencyStore.releasedOwnersTtl(properties.inFlightLease()));
    }

    @Bean
    @ConditionalOnBean(RecordInspector.class)
    @ConditionalOnAvailableEndpoint(endpoint = IdempotencyOperatorEndpoint.class)
    IdempotencyOperatorEndpoint idempotencyOperatorEndpoint(RecordInspector inspector, IdempotencyProperties properties) {
        return new IdempotencyOperatorEndpoint(inspector, properties.retention());
    }

    @Bean
    @ConditionalOnBean(RecordInspector.class)
    @ConditionalOnProperty(name = "idempotency.record-counts.enabled", matchIfMissing = true)
    RecordCountSampler idempotencyRecordCountSampler(RecordInspector inspector, IdempotencyMetrics metrics,
            IdempotencyProperties properties) {
        return new RecordCountSampler(inspector, metrics.registry(), properties.recordCounts().interval(),
                properties.recordCounts().pendingAfter(), properties.recordCounts().maxRecords());
    }
}
