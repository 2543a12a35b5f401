package dev.retrysafe.gateway.idempotency.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.filter.IdempotencyGatewayFilterFactory;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.tenant.TenantResolver;
import dev.retrysafe.gateway.idempotency.store.redis.SampledCommandTracing;
import dev.retrysafe.gateway.idempotency.store.redis.NearCache;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.tracing.MicrometerTracing;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.annotation.ImportCandidates;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.observation.LettuceObservationAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import reactor.core.publisher.Mono;

/** An existing gateway application gets the filter from the module's auto-configuration alone. */
class IdempotencyAutoConfigurationTest {
    static final String KEY = Base64.getEncoder().encodeToString(new byte[32]);
    final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
                    DataRedisReactiveAutoConfiguration.class, IdempotencyRedisClientAutoConfiguration.class,
                    IdempotencyStoreAutoConfiguration.class, IdempotencyFleetAutoConfiguration.class,
                    IdempotencyObservabilityAutoConfiguration.class, IdempotencyOperatorAutoConfiguration.class,
                    IdempotencyFilterAutoConfiguration.class))
            // Nothing listens on port 1: the store's startup checks find no Redis (never the machine's on 6379).
            .withPropertyValues("spring.data.redis.port=1");

    @Test
    void isRegisteredForAutoConfiguration() {
        assertThat(ImportCandidates.load(AutoConfiguration.class, getClass().getClassLoader()).getCandidates())
                .contains(IdempotencyRedisClientAutoConfiguration.class.getName(),
                        IdempotencyStoreAutoConfiguration.class.getName(),
                        IdempotencyFleetAutoConfiguration.class.getName(),
                        IdempotencyObservabilityAutoConfiguration.class.getName(),
                        IdempotencyOperatorAutoConfiguration.class.getName(),
                        IdempotencyFilterAutoConfiguration.class.getName());
    }

    @Test
    void providesTheFilterFactoryTheStoreAndTheTenantResolver() {
        runner.run(context -> {
            assertThat(context).hasSingleBean(IdempotencyGatewayFilterFactory.class);
            assertThat(context).hasSingleBean(IdempotencyStore.class);
            assertThat(context).hasSingleBean(TenantResolver.class);
            assertThat(context.getBean(IdempotencyGatewayFilterFactory.class).name()).isEqualTo("Idempotency");
        });
    }

    @Test
    void anApplicationTenantResolverReplacesTheDefault() {
        TenantResolver custom = exchange -> Mono.just("custom");
        runner.withBean(TenantResolver.class, () -> custom).run(context ->
                assertThat(context.getBean(TenantResolver.class)).isSameAs(custom));
    }

    @Test
    void routeArgsAreValidatedAtStartup() {
        runner.withPropertyValues("idempotency.replay-status=302").run(context -> {
            IdempotencyGatewayFilterFactory factory = context.getBean(IdempotencyGatewayFilterFactory.class);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> factory.apply(new IdempotencyGatewayFilterFactory.Config()))
                    .hasMessageContaining("replay-status");
        });
    }

    @Test
    void replicaAcksAreRefusedOnRedisClusterWithAClearMessage() {
        runner.withPropertyValues("idempotency.replica-acks=1",
                "spring.data.redis.cluster.nodes=127.0.0.1:7000,127.0.0.1:7001").run(context ->
                assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("idempotency.replica-acks is not available with Redis Cluster"));
    }

    @Test
    void aReplicaAckTimeoutNotShorterThanTheStoreTimeoutIsRefused() {
        runner.withPropertyValues("idempotency.replica-acks=1", "idempotency.replica-ack-timeout=2s",
                "idempotency.store-timeout=1s").run(context ->
                assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("idempotency.replica-ack-timeout (PT2S) must be shorter"));
    }

    @Test
    void replicaAcksOnStandaloneRedisStartWithoutConnecting() {
        runner.withPropertyValues("idempotency.replica-acks=1", "spring.data.redis.port=1").run(context ->
                assertThat(context).hasNotFailed().hasSingleBean(IdempotencyStore.class));
    }

    @Test
    void theNearCacheIsOffUnlessEnabledAndStartsWithoutConnectingWhenItIs() {
        runner.run(context -> assertThat(context).doesNotHaveBean(NearCache.class));
        runner.withPropertyValues("idempotency.store.near-cache.enabled=true").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(NearCache.class);
            assertThat(context.getBean(NearCache.class).serving()).isFalse();
        });
    }

    @Test
    void aNearCacheWithoutABoundIsRefused() {
        runner.withPropertyValues("idempotency.store.near-cache.enabled=true",
                "idempotency.store.near-cache.max-staleness=0s").run(context ->
                assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("idempotency.store.near-cache.max-staleness must be positive"));
    }

    @Test
    void onARedisClusterTheNearCacheTurnsItselfOff() {
        runner.withPropertyValues("idempotency.store.near-cache.enabled=true",
                "spring.data.redis.cluster.nodes=127.0.0.1:1,127.0.0.1:2").run(context -> {
            NearCache cache = context.getBean(NearCache.class);
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(30).toNanos();
            while (!cache.refused() && System.nanoTime() - deadline < 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
            }
            assertThat(cache.refused()).isTrue();
            assertThat(cache.serving()).isFalse();
        });
    }

    @Test
    void redisCommandsAreObservedOnlyInSampledTracesByDefault() {
        observedRunner().run(context -> assertThat(context.getBean(ClientResources.class).tracing())
                .isInstanceOf(SampledCommandTracing.class));
    }

    @Test
    void everyRedisCommandIsObservedWhenAllAreAskedFor() {
        observedRunner().withPropertyValues("idempotency.redis-command-observations=all")
                .run(context -> assertThat(context.getBean(ClientResources.class).tracing())
                        .isInstanceOf(MicrometerTracing.class));
    }

    @Test
    void withoutAnObservationRegistryRedisCommandsAreNotTraced() {
        runner.run(context -> assertThat(context.getBean(ClientResources.class).tracing().isEnabled()).isFalse());
    }

    /** With Spring Boot's observation registry and its Lettuce observation customizer. */
    ReactiveWebApplicationContextRunner observedRunner() {
        return runner.withConfiguration(AutoConfigurations.of(ObservationAutoConfiguration.class,
                LettuceObservationAutoConfiguration.class));
    }

    @Test
    void storedResponsesAreNotEncryptedByDefault() {
        runner.run(context -> assertThat(context.getBean(EncryptionKeys.class).enabled()).isFalse());
    }

    @Test
    void anActiveKeyTurnsEncryptionOn() {
        runner.withPropertyValues("idempotency.encryption.keys.k2026=" + KEY, "idempotency.encryption.active-key=k2026")
                .run(context -> assertThat(context.getBean(EncryptionKeys.class).enabled()).isTrue());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '"', value = {
            "idempotency.encryption.keys.k1=c2hvcnQ=,idempotency.encryption.active-key=k1 | 'k1' must be a 256-bit AES key",
            "idempotency.encryption.keys.k1=%%%%,idempotency.encryption.active-key=k1 | 'k1' is not valid base64",
            "idempotency.encryption.keys.k1=KEY,idempotency.encryption.active-key=k2 | 'k2' is not one of the configured keys",
            "idempotency.encryption.keys.k1=KEY | no active key",
            "idempotency.encryption.active-key=k1 | no keys are configured"})
    void faultyEncryptionSettingsFailTheStartupWithAMessageNamingThem(String properties, String expected) {
        runner.withPropertyValues(properties.replace("KEY", KEY).split(",")).run(context -> {
            assertThat(context).hasFailed();
            StringBuilder messages = new StringBuilder();
            for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
                messages.append(t.getMessage()).append('\n');
            }
            assertThat(messages.toString()).contains("idempotency.encryption")
                    .contains(expected);
        });
    }
}
