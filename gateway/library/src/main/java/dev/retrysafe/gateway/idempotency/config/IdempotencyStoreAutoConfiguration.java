package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.observability.TracedObservations;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.LeaseRenewals;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.redis.PreopenedConnections;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisMemoryWatch;
import dev.retrysafe.gateway.idempotency.store.redis.RedisProcessQueue;
import dev.retrysafe.gateway.idempotency.store.redis.RedisLinks;
import dev.retrysafe.gateway.idempotency.store.redis.RedisReconcileQueue;
import dev.retrysafe.gateway.idempotency.store.redis.RedisWakeUps;
import dev.retrysafe.gateway.idempotency.store.redis.SentinelSwitchWatch;
import dev.retrysafe.gateway.idempotency.store.redis.ReplicaAcks;
import dev.retrysafe.gateway.idempotency.store.redis.RedisStoreHealthIndicator;
import dev.retrysafe.gateway.idempotency.store.redis.SampledCommandTracing;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.tracing.MicrometerTracing;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.function.Predicate;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.data.redis.autoconfigure.ClientResourcesBuilderCustomizer;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.LettuceClientOptionsBuilderCustomizer;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.ClassUtils;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;

/**
 * The store: the Redis records behind the filter (on the Redis of the standard {@code spring.data.redis.*}
 * properties), the client settings they need, wake-ups, lease renewals and the store's health.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
        "org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration"})
@ConditionalOnClass({GatewayFilterFactory.class, ReactiveRedisConnectionFactory.class})
@EnableConfigurationProperties({IdempotencyProperties.class, EncryptionProperties.class})
public class IdempotencyStoreAutoConfiguration {

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

    /**
     * Spring Boot observes every Lettuce command (its {@code lettuceObservation} customizer): replaced, unless
     * {@code idempotency.redis-command-observations=all}, by the same observations for the commands of sampled traces
     * only, so that a guarded request is one observation rather than one more per Redis call. Applied after Boot's
     * (this configuration comes after Spring Data Redis's, Boot's before it).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MicrometerTracing.class)
    @ConditionalOnBean(name = "lettuceObservation")
    @ConditionalOnProperty(name = "idempotency.redis-command-observations", havingValue = "sampled",
            matchIfMissing = true)
    static class SampledRedisCommands {
        private static final boolean TRACING = ClassUtils.isPresent(
                "io.micrometer.tracing.handler.TracingObservationHandler", SampledRedisCommands.class.getClassLoader());

        @Bean
        ClientResourcesBuilderCustomizer idempotencySampledRedisCommands(ObservationRegistry registry) {
            // Without Micrometer Tracing nothing is sampled: no command is observed.
            Predicate<Observation> sampled = TRACING ? TracedObservations::sampled : observation -> false;
            return resources -> resources.tracing(
                    new SampledCommandTracing(registry, new MicrometerTracing(registry, "Redis"), sampled));
        }
    }

    /**
     * With Sentinel, the client's links, so that a failover can cut those to the master Sentinel replaced (see
     * {@link SentinelSwitchWatch}); standalone and Cluster clients get nothing installed.
     */
    @Bean
    RedisLinks idempotencyRedisLinks() {
        return new RedisLinks();
    }

    @Bean
    ClientResourcesBuilderCustomizer idempotencyRedisLinksOnSentinel(RedisLinks links,
            ObjectProvider<DataRedisConnectionDetails> details, ObjectProvider<RedisSentinelConfiguration> sentinel) {
        return resources -> {
            DataRedisConnectionDetails connection = details.getIfAvailable();
            if (sentinel.getIfAvailable() != null || connection != null && connection.getSentinel() != null) {
                resources.nettyCustomizer(links);
            }
        };
    }

    /** After {@code SENTINEL FAILOVER}, moves the gateway's connections to the new master at once. */
    @Bean
    @ConditionalOnBean(LettuceConnectionFactory.class)
    SentinelSwitchWatch idempotencySentinelSwitchWatch(LettuceConnectionFactory connectionFactory, RedisLinks links) {
        return new SentinelSwitchWatch(connectionFactory, links);
    }

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
            EncryptionKeys encryption) {
        if (!(connectionFactory instanceof LettuceConnectionFactory)) {
            throw new IllegalStateException("The Redis idempotency store needs the Lettuce Redis client (Spring Data "
                    + "Redis's LettuceConnectionFactory)");
        }
        return new RedisIdempotencyStore(connections::store, wakeUps,
                (int) Math.min(Integer.MAX_VALUE, properties.compressStoredBodiesAbove().toBytes()), encryption,
                replicaAcks(connectionFactory, properties), properties.processPoll().initialDelay(),
                RedisIdempotencyStore.releasedOwnersTtl(properties.inFlightLease()));
    }

    /** The fleet's pending processes, beside the Redis store that queues them with each 202. */
    @Bean
    @ConditionalOnBean(RedisIdempotencyStore.class)
    @ConditionalOnMissingBean(ProcessQueue.class)
    RedisProcessQueue idempotencyProcessQueue(ReactiveRedisConnectionFactory connectionFactory,
            PreopenedConnections connections) {
        boolean cluster = connectionFactory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
        return new RedisProcessQueue(bytesTemplate(connections.connections()), cluster);
    }

    /** The fleet's UNCERTAIN records to look up at their upstream, beside the Redis store that queues them. */
    @Bean
    @ConditionalOnBean(RedisIdempotencyStore.class)
    @ConditionalOnMissingBean(ReconcileQueue.class)
    RedisReconcileQueue idempotencyReconcileQueue(ReactiveRedisConnectionFactory connectionFactory,
            IdempotencyProperties properties, EncryptionKeys encryption) {
        boolean cluster = connectionFactory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
        return new RedisReconcileQueue(bytesTemplate(connectionFactory),
                (int) Math.min(Integer.MAX_VALUE, properties.compressStoredBodiesAbove().toBytes()), encryption,
                RedisIdempotencyStore.releasedOwnersTtl(properties.inFlightLease()), cluster);
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
            IdempotencyProperties properties, ObjectProvider<IdempotencyMetrics> metrics) {
        boolean cluster = connectionFactory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
        IdempotencyMetrics meters = metrics.getIfAvailable();
        Runnable countLoss = meters == null ? () -> { } : meters::storeMemoryLost;
        RedisMemoryWatch watch = RedisMemoryWatch.on(bytesTemplate(connectionFactory), cluster,
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

    /**
     * Health component {@code idempotencyStore}; {@code management.health.idempotency-store.enabled=false} drops
     * it.
     */
    @Bean
    @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
    @ConditionalOnEnabledHealthIndicator("idempotency-store")
    RedisStoreHealthIndicator idempotencyStoreHealthIndicator(ReactiveRedisConnectionFactory connectionFactory,
            IdempotencyProperties properties, ObjectProvider<RedisMemoryWatch> memoryWatch) {
        String whileDown = properties.storeUnavailable() == IdempotencyProperties.StoreUnavailable.FORWARD
                ? "forwarded unprotected, each one logged and counted (idempotency.store-unavailable=forward)"
                : "refused with 503 and Retry-After, nothing forwarded (idempotency.store-unavailable=reject)";
        RedisMemoryWatch watch = memoryWatch.getIfAvailable();
        return new RedisStoreHealthIndicator(bytesTemplate(connectionFactory), properties.storeTimeout(), whileDown,
                watch == null ? Map::of : watch::details);
    }

    static ReactiveRedisTemplate<String, byte[]> bytesTemplate(ReactiveRedisConnectionFactory connections) {
        RedisSerializationContext<String, byte[]> context = RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray())
                .key(RedisSerializer.string())
                .hashKey(RedisSerializer.string())
                .build();
        return new ReactiveRedisTemplate<>(connections, context);
    }
}
