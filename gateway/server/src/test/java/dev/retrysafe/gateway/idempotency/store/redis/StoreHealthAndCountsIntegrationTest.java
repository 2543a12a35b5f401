package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.observability.RecordCountSampler;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import io.lettuce.core.ClientOptions;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;

/**
 * The store's health and the record counts against a real Redis that the test stops: DOWN with the reason and
 * what guarded requests get meanwhile, gauges NaN rather than stale; UP again once Redis is back. And a count that
 * would read more records than allowed gives up.
 */
class StoreHealthAndCountsIntegrationTest {
    EmbeddedRedisServer redis;
    LettuceConnectionFactory connections;
    ReactiveRedisTemplate<String, byte[]> template;
    StoreConnection store;

    @BeforeEach
    void startRedis() {
        redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        // As the gateway configures Lettuce: commands fail at once while disconnected.
        connections = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redis.port()),
                LettuceClientConfiguration.builder().clientOptions(ClientOptions.builder()
                        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build()).build());
        connections.afterPropertiesSet();
        connections.start();
        template = new ReactiveRedisTemplate<>(connections, RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray())
                .key(RedisSerializer.string()).hashKey(RedisSerializer.string()).build());
        store = StoreConnection.open(connections);
    }

    @AfterEach
    void stopRedis() {
        store.close();
        connections.destroy();
        redis.stop();
    }

    @Test
    void healthIsDownWithTheReasonWhileRedisIsStoppedAndUpWhenItIsBack() {
        RedisStoreHealthIndicator health = new RedisStoreHealthIndicator(() -> store, Duration.ofSeconds(1),
                "refused with 503", Map::of);
        Health up = health.health().block(Duration.ofSeconds(10));
        assertThat(up.getStatus()).isEqualTo(Status.UP);
        assertThat(up.getDetails()).containsKey("roundTripMillis");

        redis.stop();
        Health down = health.health().block(Duration.ofSeconds(10));
        assertThat(down.getStatus()).isEqualTo(Status.DOWN);
        assertThat(down.getDetails()).containsEntry("guardedRequests", "refused with 503");
        assertThat((String) down.getDetails().get("error")).startsWith("Redis ");

        redis.start();
        awaitUp(health);
    }

    @Test
    void recordCountsAreNaNWhileRedisIsStopped() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        RecordCountSampler sampler = new RecordCountSampler(inspector(), meters, Duration.ofSeconds(1),
                Duration.ofSeconds(60), 1000);
        assertThat(meters.get(RecordCountSampler.RECORDS).tag("state", "UNCERTAIN").gauge().value()).isNaN();

        sampler.sample().block(Duration.ofSeconds(10));
        assertThat(meters.get(RecordCountSampler.RECORDS).tag("state", "UNCERTAIN").gauge().value()).isZero();
        assertThat(meters.get(RecordCountSampler.PENDING).gauge().value()).isZero();

        redis.stop();
        sampler.sample().block(Duration.ofSeconds(10));
        assertThat(meters.get(RecordCountSampler.RECORDS).tag("state", "UNCERTAIN").gauge().value()).isNaN();
        assertThat(meters.get(RecordCountSampler.PENDING).gauge().value()).isNaN();
    }

    @Test
    void aCountThatWouldReadMoreRecordsThanAllowedGivesUp() {
        for (int i = 0; i < 3; i++) {
            template.<String, byte[]>opsForHash().put(RedisKeyspace.recordKey("scope-" + i), "state",
                    "COMPLETED".getBytes()).block(Duration.ofSeconds(10));
        }
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        RedisRecordInspector inspector = inspector();

        new RecordCountSampler(inspector, meters, Duration.ofSeconds(1), Duration.ofSeconds(60), 3).sample()
                .block(Duration.ofSeconds(10));
        assertThat(meters.get(RecordCountSampler.RECORDS).tag("state", "COMPLETED").gauge().value()).isEqualTo(3);

        SimpleMeterRegistry limited = new SimpleMeterRegistry();
        new RecordCountSampler(inspector, limited, Duration.ofSeconds(1), Duration.ofSeconds(60), 2).sample()
                .block(Duration.ofSeconds(10));
        assertThat(limited.get(RecordCountSampler.RECORDS).tag("state", "COMPLETED").gauge().value()).isNaN();
    }

    private static void awaitUp(RedisStoreHealthIndicator health) {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (health.health().block(Duration.ofSeconds(10)).getStatus() != Status.UP) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the store never came back UP");
            }
        }
    }

    private RedisRecordInspector inspector() {
        return new RedisRecordInspector(() -> store, template, RedisWakeUps.on(connections, new SettleSignals()),
                EncryptionKeys.none(), false, RedisIdempotencyStore.RELEASED_OWNERS_TTL);
    }
}
