package dev.retrysafe.minimal;

import dev.retrysafe.minimal.peer.NaiveIdempotencyGatewayFilterFactory;
import java.net.InetSocketAddress;
import java.util.Optional;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import reactor.core.publisher.Mono;

/**
 * A platform team's own Spring Cloud Gateway with the Idempotency filter added as a library: nothing of our runnable
 * server (no security chain, no Prometheus, no tracing, no application.yml of ours). Routes come from the
 * command line or the team's own configuration. It is the peer our server is measured against, and the proof that
 * the library works on its own. It also holds the peers our filter is measured against in the same JVM
 * ({@code load-tests/peers.sh}): Spring Cloud Gateway's RequestRateLimiter needs the key resolver below, and a
 * naive hand-written idempotency filter ({@code NaiveIdempotency}) is here to be outrun.
 */
@SpringBootApplication
public class MinimalGatewayApplication {
    public static void main(String[] args) {
        SpringApplication.run(MinimalGatewayApplication.class, args);
    }

    /** Spring Cloud Gateway's RequestRateLimiter needs a key; a gateway without logins limits by client address. */
    @Bean
    KeyResolver clientAddress() {
        return exchange -> Mono.just(Optional.ofNullable(exchange.getRequest().getRemoteAddress())
                .map(InetSocketAddress::getAddress).map(Object::toString).orElse("unknown"));
    }

    /** A benchmark peer (route filter {@code NaiveIdempotency}): see {@link NaiveIdempotencyGatewayFilterFactory}. */
    @Bean
    NaiveIdempotencyGatewayFilterFactory naiveIdempotencyGatewayFilterFactory(ReactiveStringRedisTemplate redis) {
        return new NaiveIdempotencyGatewayFilterFactory(redis);
    }
}
