package dev.retrysafe.gateway.embedded;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * A Redis server started with the gateway, for zero-setup runs; never on unless asked for. The runnable server's
 * own setting: the filter library knows nothing of it.
 *
 * @param enabled   Whether to start a Redis with the gateway; ignored when spring.data.redis.url is set.
 * @param port      Port of the embedded Redis; 0 picks a free one.
 * @param directory Where the bundled Redis binary is extracted. Unset: idempotency-gateway-redis in the
 *                  java.io.tmpdir folder.
 */
@ConfigurationProperties("idempotency.embedded-redis")
public record EmbeddedRedisProperties(@DefaultValue("false") boolean enabled, @DefaultValue("0") int port,
        String directory) {
}
