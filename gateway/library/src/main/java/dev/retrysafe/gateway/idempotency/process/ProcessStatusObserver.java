package dev.retrysafe.gateway.idempotency.process;

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
import reactor.core.publisher.Mono;

/**
 * Watches status reads ({@code GET /processes/{processId}}) on any route: when one reports a terminal status for a
 * process that a guarded route's 202 started, that key's retention starts. The response itself passes unchanged,
 * but only once the end is recorded: a client that saw COMPLETED and retries at once must get a replay without
 * {@code Retry-After}. The hold is bounded by the store timeout; past it, or when the store fails, the response
 * goes out anyway and the miss is reported.
 */
public final class ProcessStatusObserver implements GlobalFilter, Ordered {
    private static final int MAX_STATUS_BYTES = 64 * 1024;

    private final ProcessWatcher watcher;
    private final Duration storeTimeout;
    private final ProcessEndEvents events;
    private final Map<String, Watched> byWriteRoute = new ConcurrentHashMap<>();

    public ProcessStatusObserver(ProcessWatcher watcher, Duration storeTimeout, ProcessEndEvents events) {
        this.watcher = watcher;
        this.storeTimeout = storeTimeout;
        this.events = events;
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
            return super.writeWith(HeldBody.releasedAfter(body, MAX_STATUS_BYTES, this::recordEnd));
        }

        private Mono<Void> recordEnd(byte[] statusBody) {
            return watched.tracking().terminalStatus(getHeaders().getFirst("Content-Encoding"), statusBody)
                    .map(terminal -> watcher.observed(writeRouteId, processId, terminal, watched.retention())
                            .timeout(storeTimeout)
                            .onErrorResume(e -> {
                                events.processEndUnrecorded(writeRouteId, processId, terminal, e);
                                return Mono.empty();
                            })
                            .then())
                    .orElse(Mono.empty());
        }
    }
}
