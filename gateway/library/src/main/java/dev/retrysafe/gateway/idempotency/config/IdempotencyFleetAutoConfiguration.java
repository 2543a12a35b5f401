package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import dev.retrysafe.gateway.idempotency.store.redis.PreopenedConnections;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisMemoryWatch;
import dev.retrysafe.gateway.idempotency.store.redis.RedisProcessQueue;
import dev.retrysafe.gateway.idempotency.store.redis.RedisReconcileQueue;
import dev.retrysafe.gateway.idempotency.store.redis.RedisStoreHealthIndicator;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Beside the Redis store, what the fleet shares through it: the queue of pending processes and the lookups of
 * UNCERTAIN records, the watch on Redis forgetting records, and the store's health.
 */
@AutoConfiguration(after = IdempotencyStoreAutoConfiguration.class)
@ConditionalOnClass({GatewayFilterFactory.class, ReactiveRedisConnectionFactory.class})
@EnableConfigurationProperties(IdempotencyProperties.class)
public class IdempotencyFleetAutoConfiguration {

    /** The fleet's pending processes, beside the Redis store that queues them with each 202. */
    @Bean
    @ConditionalOnBean(RedisIdempotencyStore.class)
    @ConditionalOnMissingBean(ProcessQueue.class)
    RedisProcessQueue idempotencyProcessQueue(ReactiveRedisConnectionFactory connectionFactory,
            PreopenedConnections connections) {
        boolean cluster = connectionFactory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
        return new RedisProcessQueue(connections::store, connections.template(), cluster);
    }

    /** The fleet's UNCERTAIN records to look up at their upstream, beside the Redis store that queues them. */
    @Bean
    @ConditionalOnBean(RedisIdempotencyStore.class)
    @ConditionalOnMissingBean(ReconcileQueue.class)
    RedisReconcileQueue idempotencyReconcileQueue(ReactiveRedisConnectionFactory connectionFactory,
            PreopenedConnections connections, IdempotencyProperties properties, EncryptionKeys encryption) {
        boolean cluster = connectionFactory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
        return new RedisReconcileQueue(connections::store, connections.template(),
                (int) Math.min(Integer.MAX_VALUE, properties.compressStoredBodiesAbove().toBytes()), encryption,
                RedisIdempotencyStore.releasedOwnersTtl(properties.inFlightLease()),
                properties.processPoll().initialDelay(), cluster);
    }

    /**
     * Whether the Redis can forget records (eviction, persistence, memory lost), at startup and every
     * {@code idempotency.store.check-interval}; a check waits for Redis up to {@code store-timeout} + 5 s (a first
     * connection on a busy machine), after which a startup goes on and the check is tried again.
     */
    @Bean
    @ConditionalOnBean(RedisIdempotencyStore.class)
    @ConditionalOnMissingBean
    RedisMemoryWatch idempotencyRedisMemoryWatch(ReactiveRedisConnectionFactory connectionFactory,
            PreopenedConnections connections, IdempotencyProperties properties,
            ObjectProvider<IdempotencyMetrics> metrics) {
        boolean cluster = connectionFactory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
        IdempotencyMetrics meters = metrics.getIfAvailable();
        Runnable countLoss = meters == null ? () -> { } : meters::storeMemoryLost;
        RedisMemoryWatch watch = RedisMemoryWatch.on(connections, cluster,
                singleRedisName(connectionFactory), properties.store().allowEviction(),
                properties.store().checkInterval(), properties.storeTimeout().plusSeconds(5), properties.replicaAcks(),
                countLoss);
        if (meters != null) {
            meters.evictingMasters(watch::evictingMasters);
        }
        return watch;
    }

    private static String singleRedisName(ReactiveRedisConnectionFactory connectionFactory) {
        if (!(connectionFactory instanceof LettuceConnectionFactory lettuce)) {
            return "redis";
        }
        if (lettuce.getSentinelConfiguration() != null && lettuce.getSentinelConfiguration().getMaster() != null) {
            return "Sentinel master " + lettuce.getSentinelConfiguration().getMaster().getName();
        }
        return lettuce.getHostName() + ":" + lettuce.getPort();
    }

    /**
     * Health component {@code idempotencyStore}; {@code management.health.idempotency-store.enabled=false} drops
     * it.
     */
    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    @ConditionalOnEnabledHealthIndicator("idempotency-store")
    RedisStoreHealthIndicator idempotencyStoreHealthIndicator(PreopenedConnections connections,
            IdempotencyProperties properties, ObjectProvider<RedisMemoryWatch> memoryWatch) {
        String whileDown = properties.storeUnavailable() == IdempotencyProperties.StoreUnavailable.FORWARD
                ? "forwarded unprotected, each one logged and counted (idempotency.store-unavailable=forward)"
                : "refused with 503 and Retry-After, nothing forwarded (idempotency.store-unavailable=reject)";
        RedisMemoryWatch watch = memoryWatch.getIfAvailable();
        return new RedisStoreHealthIndicator(connections::store, properties.storeTimeout(), whileDown,
                watch == null ? Map::of : watch::details);
    }
}
