package dev.retrysafe.gateway.idempotency.process;

import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.reactivestreams.Publisher;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.gateway.filter.NettyWriteResponseFilter;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Watches status reads ({@code GET /processes/{processId}}) on any route: when one reports a terminal status for a
 * process that a guarded route's 202 started, that key's retention starts. The response itself passes unchanged.
 */
public final class ProcessStatusObserver implements GlobalFilter, Ordered {
    private static final int MAX_STATUS_BYTES = 64 * 1024;

    private final ProcessWatcher watcher;
    private final Map<String, Watched> byWriteRoute = new ConcurrentHashMap<>();

    public ProcessStatusObserver(ProcessWatcher watcher) {
        this.watcher = watcher;
    }

    /** Called when a guarded route with process tracking is built. */
    public void register(String writeRouteId, ProcessTracking tracking, Duration retention) {
        byWriteRoute.put(writeRouteId, new Watched(tracking, retention));
    }

    @Override
    public int getOrder() {
        return NettyWriteResponseFilter.WRITE_RESPONSE_FILTER_ORDER - 1;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
        if (byWriteRoute.isEmpty() || exchange.getRequest().getMethod() != HttpMethod.GET) {
            return chain.filter(exchange);
        }
        String path = exchange.getRequest().getURI().getRawPath();
        for (Map.Entry<String, Watched> entry : byWriteRoute.entrySet()) {
            Optional<String> processId = entry.getValue().tracking().processIdInPath(path);
            if (processId.isPresent()) {
                ServerHttpResponse observed = new Observed(exchange.getResponse(), entry.getKey(), processId.get(),
                        entry.getValue());
                return chain.filter(exchange.mutate().response(observed).build());
            }
        }
        return chain.filter(exchange);
    }

    private record Watched(ProcessTracking tracking, Duration retention) {
    }

    private final class Observed extends ServerHttpResponseDecorator {
        private final String writeRouteId;
        private final String processId;
        private final Watched watched;

        Observed(ServerHttpResponse delegate, String writeRouteId, String processId, Watched watched) {
            super(delegate);
            this.writeRouteId = writeRouteId;
            this.processId = processId;
            this.watched = watched;
        }

        @Override
        public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
            HttpStatusCode status = getStatusCode();
            if (status == null || !status.is2xxSuccessful()) {
                return super.writeWith(body);
            }
            ByteArrayOutputStream copy = new ByteArrayOutputStream();
            Flux<? extends DataBuffer> tapped = Flux.from(body).doOnNext(buffer -> {
                if (copy.size() + buffer.readableByteCount() <= MAX_STATUS_BYTES) {
                    byte[] bytes = new byte[buffer.readableByteCount()];
                    buffer.toByteBuffer(buffer.readPosition(), java.nio.ByteBuffer.wrap(bytes), 0, bytes.length);
                    copy.writeBytes(bytes);
                }
            });
            return super.writeWith(tapped).then(Mono.defer(() -> watched.tracking().terminalStatus(
                    getHeaders().getFirst("Content-Encoding"), copy.toByteArray())
                    .map(terminal -> watcher.observed(writeRouteId, processId, terminal, watched.retention())
                            .onErrorResume(e -> Mono.just(false)).then())
                    .orElse(Mono.empty())));
        }
    }
}
