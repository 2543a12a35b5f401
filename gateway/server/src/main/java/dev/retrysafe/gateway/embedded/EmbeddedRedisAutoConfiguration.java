package dev.retrysafe.gateway.embedded;

import java.nio.file.Path;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.context.annotation.Bean;
import redis.embedded.RedisServer;

/**
 * Zero-setup runs: with {@code idempotency.embedded-redis.enabled=true} and no {@code spring.data.redis.url}, the
 * gateway starts its own Redis and points the standard Redis auto-configuration at it.
 */
@AutoConfiguration(beforeName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass(RedisServer.class)
@ConditionalOnExpression("${idempotency.embedded-redis.enabled:false} and '${spring.data.redis.url:}'.isEmpty()")
@EnableConfigurationProperties(EmbeddedRedisProperties.class)
public class EmbeddedRedisAutoConfiguration {

    @Bean
    EmbeddedRedisServer embeddedRedisServer(EmbeddedRedisProperties embedded) {
        String directory = embedded.directory() != null ? embedded.directory()
                : Path.of(System.getProperty("java.io.tmpdir"), "idempotency-gateway-redis").toString();
        return new EmbeddedRedisServer(embedded.port(), Path.of(directory));
    }

    @Bean
    DataRedisConnectionDetails embeddedRedisConnectionDetails(EmbeddedRedisServer server) {
        return new DataRedisConnectionDetails() {
            @Override
            public Standalone getStandalone() {
                return Standalone.of("127.0.0.1", server.port());
            }
        };
    }
}
