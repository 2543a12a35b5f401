package dev.retrysafe.gateway.embedded;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * A Redis server started with the gateway, for zero-setup runs; never on unless asked for. The runnable server's
 * own setting: the filter library knows nothing of it.
 *
 * @param enabled start a Redis with the gateway when {@code spring.data.redis.url} is not set
 * @param port its port; 0 picks a free one
 * @param directory where the bundled binary is extracted; {@code java.io.tmpdir}/idempotency-gateway-redis if unset
 */
@ConfigurationProperties("idempotency.embedded-redis")
public record EmbeddedRedisProperties(@DefaultValue("false") boolean enabled, @DefaultValue("0") int port,
        String directory) {
}
