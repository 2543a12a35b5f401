package dev.retrysafe.minimal.peer;

import java.time.Duration;
import java.util.Base64;
import org.reactivestreams.Publisher;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.NettyWriteResponseFilter;
import org.springframework.cloud.gateway.filter.OrderedGatewayFilter;
import org.springframework.cloud.gateway.filter.factory.AbstractGatewayFilterFactory;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A benchmark peer, not part of the product: the idempotency filter a team writes in an afternoon, with three plain
 * Redis commands and nothing else. {@code GET} the key: a stored answer is replayed; else {@code SET NX} an in-flight
 * marker (taken: 409); forward; {@code SET} the answer's status and body. No payload fingerprint, no tenant, no
 * lease renewal, no uncertain outcomes, no wake-ups: what our filter adds over this is its guarantee, and
 * {@code load-tests/peers.sh} measures what that costs next to this (route filter name {@code NaiveIdempotency}).
 */
public class NaiveIdempotencyGatewayFilterFactory
        extends AbstractGatewayFilterFactory<NaiveIdempotencyGatewayFilterFactory.Config> {
    static final String KEY_PREFIX = "naive-idempotency:";
    private static final String IN_FLIGHT = "in-flight";
    private static final Duration IN_FLIGHT_TTL = Duration.ofMinutes(1);
    private static final Duration RETENTION = Duration.ofHours(24);

    private final ReactiveStringRedisTemplate redis;

    public NaiveIdempotencyGatewayFilterFactory(ReactiveStringRedisTemplate redis) {
        super(Config.class);
        this.redis = redis;
    }

    @Override
    public String name() {
        return "NaiveIdempotency";
    }

    @Override
    public GatewayFilter apply(Config config) {
        // Before Spring Cloud Gateway's response writer (as ModifyResponseBody is), or it writes the original response.
        return new OrderedGatewayFilter((exchange, chain) -> {
            String header = exchange.getRequest().getHeaders().getFirst("Idempotency-Key");
            if (header == null || header.isBlank()) {
                exchange.getResponse().setStatusCode(HttpStatusCode.valueOf(422));
                return exchange.getResponse().setComplete();
            }
            String key = KEY_PREFIX + header;
            return redis.opsForValue().get(key)
                    .flatMap(stored -> IN_FLIGHT.equals(stored)
                            ? conflict(exchange.getResponse())
                            : replay(exchange.getResponse(), stored))
                    .switchIfEmpty(Mono.defer(() -> redis.opsForValue().setIfAbsent(key, IN_FLIGHT, IN_FLIGHT_TTL)
                            .flatMap(reserved -> reserved
                                    ? chain.filter(exchange.mutate().response(new Recording(exchange.getResponse(),
                                            key)).build())
                                    : conflict(exchange.getResponse()))));
        }, NettyWriteResponseFilter.WRITE_RESPONSE_FILTER_ORDER - 1);
    }

    private static Mono<Void> conflict(ServerHttpResponse response) {
        response.setStatusCode(HttpStatus.CONFLICT);
        return response.setComplete();
    }

    /** Stored as "status:content encoding:base64(body)": one string, one SET, one GET. */
    private static Mono<Void> replay(ServerHttpResponse response, String stored) {
        String[] parts = stored.split(":", 3);
        byte[] body = Base64.getDecoder().decode(parts[2]);
        response.setStatusCode(HttpStatusCode.valueOf(Integer.parseInt(parts[0])));
        response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
        if (!parts[1].isEmpty()) {
            response.getHeaders().set(HttpHeaders.CONTENT_ENCODING, parts[1]);
        }
        response.getHeaders().setContentLength(body.length);
        response.getHeaders().set("Idempotency-Replayed", "true");
        return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
    }

    /** Joins the upstream's body, stores it with the status, then writes it on. */
    private final class Recording extends ServerHttpResponseDecorator {
        private final String key;

        Recording(ServerHttpResponse delegate, String key) {
            super(delegate);
            this.key = key;
        }

        @Override
        public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
            return DataBufferUtils.join(Flux.from(body)).defaultIfEmpty(bufferFactory().wrap(new byte[0]))
                    .flatMap(joined -> {
                        byte[] bytes = new byte[joined.readableByteCount()];
                        joined.read(bytes);
                        DataBufferUtils.release(joined);
                        HttpStatusCode status = getStatusCode();
                        String encoding = getHeaders().getFirst(HttpHeaders.CONTENT_ENCODING);
                        String stored = (status == null ? 200 : status.value()) + ":"
                                + (encoding == null ? "" : encoding) + ":" + Base64.getEncoder().encodeToString(bytes);
                        return redis.opsForValue().set(key, stored, RETENTION)
                                .then(getDelegate().writeWith(Mono.fromSupplier(() -> bufferFactory().wrap(bytes))));
                    });
        }

        @Override
        public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> body) {
            return writeWith(Flux.from(body).flatMapSequential(Flux::from));
        }
    }

    /** No settings: the naive filter has none. */
    public static class Config {
    }
}
