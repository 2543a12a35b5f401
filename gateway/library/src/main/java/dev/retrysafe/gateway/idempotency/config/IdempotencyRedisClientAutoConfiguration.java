package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.observability.TracedObservations;
import dev.retrysafe.gateway.idempotency.store.redis.RedisLinks;
import dev.retrysafe.gateway.idempotency.store.redis.SentinelSwitchWatch;
import dev.retrysafe.gateway.idempotency.store.redis.SampledCommandTracing;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.tracing.MicrometerTracing;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.function.Predicate;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.data.redis.autoconfigure.ClientResourcesBuilderCustomizer;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.LettuceClientOptionsBuilderCustomizer;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.ClassUtils;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Lettuce client's settings the store needs (fail fast while disconnected, replies off the connection's thread,
 * a reconnect within a second, Redis command observations only for sampled traces) and, on Sentinel, its links
 * and the watch that moves them to a new master. Applied to the client Spring Boot builds from
 * {@code spring.data.redis.*}.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
        "org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration"})
@ConditionalOnClass({GatewayFilterFactory.class, ReactiveRedisConnectionFactory.class})
public class IdempotencyRedisClientAutoConfiguration {

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
}
