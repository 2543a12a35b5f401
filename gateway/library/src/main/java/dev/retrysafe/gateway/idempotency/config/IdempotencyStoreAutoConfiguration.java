package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.LeaseRenewals;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.redis.NearCache;
import dev.retrysafe.gateway.idempotency.store.redis.PreopenedConnections;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisWakeUps;
import dev.retrysafe.gateway.idempotency.store.redis.ReplicaAcks;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The store: the Redis records behind the filter (on the Redis of the standard {@code spring.data.redis.*}
 * properties), its connections, wake-ups and lease renewals. The Lettuce client's settings are
 * {@link IdempotencyRedisClientAutoConfiguration}'s, the fleet's queues, the memory watch and the store's health
 * {@link IdempotencyFleetAutoConfiguration}'s.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
        "org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration"})
@ConditionalOnClass({GatewayFilterFactory.class, ReactiveRedisConnectionFactory.class})
@EnableConfigurationProperties({IdempotencyProperties.class, EncryptionProperties.class})
public class IdempotencyStoreAutoConfiguration {


    /** Off unless {@code idempotency.encryption.active-key} is set. */
    @Bean
    @ConditionalOnMissingBean
    EncryptionKeys idempotencyEncryptionKeys(EncryptionProperties encryption) {
        EncryptionKeys keys = encryption.toKeys();
        if (keys.enabled()) {
            LoggerFactory.getLogger(IdempotencyStoreAutoConfiguration.class).info("Stored responses are encrypted: {}", keys);
        }
        return keys;
    }

    @Bean
    SettleSignals idempotencySettleSignals() {
        return new SettleSignals();
    }

    /**
     * The store's connections (its own Lettuce connection, and Spring Data's shared one) opened at startup, in the
     * background, never on a request's thread; the store's own one is closed with the context.
     */
    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    PreopenedConnections idempotencyStoreConnections(ReactiveRedisConnectionFactory connectionFactory,
            IdempotencyProperties properties) {
        return new PreopenedConnections(connectionFactory, properties.store().coalesceWrites());
    }

    /** Each call of a request one command on the store's own connection, no connection looked up per call. */
    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    @ConditionalOnMissingBean(IdempotencyStore.class)
    RedisIdempotencyStore idempotencyStore(ReactiveRedisConnectionFactory connectionFactory,
            PreopenedConnections connections, RedisWakeUps wakeUps, IdempotencyProperties properties,
            EncryptionKeys encryption, ObjectProvider<NearCache> nearCache) {
        if (!(connectionFactory instanceof LettuceConnectionFactory)) {
            throw new IllegalStateException("The Redis idempotency store needs the Lettuce Redis client (Spring Data "
                    + "Redis's LettuceConnectionFactory)");
        }
        return new RedisIdempotencyStore(connections::store, wakeUps,
                (int) Math.min(Integer.MAX_VALUE, properties.compressStoredBodiesAbove().toBytes()), encryption,
                replicaAcks(connectionFactory, properties), properties.processPoll().initialDelay(),
                RedisIdempotencyStore.releasedOwnersTtl(properties.inFlightLease()),
                Optional.ofNullable(nearCache.getIfAvailable()));
    }

    /**
     * Replays answered from this instance's memory, invalidated by Redis ({@code idempotency.store.near-cache}): off
     * unless enabled; off by itself, with a WARN, on a Cluster or a Redis that does not report changes.
     */
    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    @ConditionalOnProperty(name = "idempotency.store.near-cache.enabled", havingValue = "true")
    NearCache idempotencyNearCache(ReactiveRedisConnectionFactory connectionFactory, IdempotencyProperties properties) {
        if (!(connectionFactory instanceof LettuceConnectionFactory lettuce)) {
            throw new IllegalStateException("idempotency.store.near-cache needs the Lettuce Redis client");
        }
        IdempotencyProperties.NearCache settings = properties.store().nearCache();
        return new NearCache(lettuce, settings.maxEntries(), settings.maxBytes().toBytes(), settings.maxStaleness());
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

    /** Shard channels per slot on Redis 7 and later, the classic channel before (see docs/scaling.md). */
    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    RedisWakeUps idempotencyWakeUps(ReactiveRedisConnectionFactory connectionFactory, SettleSignals signals) {
        return RedisWakeUps.on(connectionFactory, signals);
    }

    @Bean
    @ConditionalOnBean(IdempotencyStore.class)
    LeaseRenewals idempotencyLeaseRenewals(IdempotencyStore store) {
        return new LeaseRenewals(store, Duration.ofMillis(50));
    }
}
