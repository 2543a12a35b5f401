package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.decision.Decision;
import dev.retrysafe.gateway.idempotency.decision.ReplayResponse;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.key.KeyCheck;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.tenant.TenantResolver;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.NettyWriteResponseFilter;
import org.springframework.cloud.gateway.route.Route;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The {@code Idempotency} route filter. A request's walk: key check, body read and fingerprint, atomic
 * reservation, then either the upstream (response streamed to the client and captured, then stored) or an answer
 * from the store (replay, mismatch, in flight). Ordered before {@link NettyWriteResponseFilter} so that the
 * upstream response passes through the capturing decorator.
 */
public final class IdempotencyGatewayFilter implements GatewayFilter, Ordered {
    public static final int ORDER = NettyWriteResponseFilter.WRITE_RESPONSE_FILTER_ORDER - 1;
    private static final Logger log = LoggerFactory.getLogger(IdempotencyGatewayFilter.class);

    private final RoutePolicy policy;
    private final IdempotencyStore store;
    private final TenantResolver tenants;
    private final GatewayResponses responses;
    private final Clock clock;

    public IdempotencyGatewayFilter(RoutePolicy policy, IdempotencyStore store, TenantResolver tenants, Clock clock) {
        this.policy = policy;
        this.store = store;
        this.tenants = tenants;
        this.clock = clock;
        this.responses = new GatewayResponses(clock);
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
        ServerHttpRequest request = exchange.getRequest();
        if (!policy.guards(request.getMethod().name())) {
            return chain.filter(exchange);
        }
        KeyCheck check = policy.keyPolicy().check(policy.keyHeader(), request.getHeaders().get(policy.keyHeader()));
        if (check instanceof KeyCheck.Rejected rejected) {
            return responses.error(exchange, GatewayError.invalidKey(rejected.message()));
        }
        IdempotencyKey key = ((KeyCheck.Valid) check).key();
        if (request.getHeaders().getContentLength() > policy.maxRequestBytes()) {
            return responses.error(exchange, GatewayError.bodyTooLarge(policy.maxRequestBytes()));
        }
        return readBody(request).flatMap(body -> {
            if (body.tooLarge()) {
                return responses.error(exchange, GatewayError.bodyTooLarge(policy.maxRequestBytes()));
            }
            return tenants.resolve(exchange)
                    .defaultIfEmpty(TenantResolver.ANONYMOUS)
                    .flatMap(tenant -> new GuardedRequest(exchange, chain, new IdempotencyScope(tenant,
                            routeId(exchange), key), fingerprint(request, body.bytes()), body.bytes()).attempt());
        });
    }

    private Mono<RequestBody> readBody(ServerHttpRequest request) {
        return DataBufferUtils.join(request.getBody(), policy.maxRequestBytes())
                .map(buffer -> {
                    try {
                        byte[] bytes = new byte[buffer.readableByteCount()];
                        buffer.read(bytes);
                        return new RequestBody(bytes, false);
                    } finally {
                        DataBufferUtils.release(buffer);
                    }
                })
                .defaultIfEmpty(new RequestBody(new byte[0], false))
                .onErrorResume(DataBufferLimitException.class, e -> Mono.just(new RequestBody(new byte[0], true)));
    }

    private Fingerprint fingerprint(ServerHttpRequest request, byte[] body) {
        MediaType contentType = request.getHeaders().getContentType();
        return policy.fingerprinter().fingerprint(request.getMethod().name(), request.getURI().getRawPath(),
                request.getURI().getRawQuery(), contentType == null ? null : contentType.toString(), body);
    }

    private static String routeId(ServerWebExchange exchange) {
        Route route = exchange.getAttribute(ServerWebExchangeUtils.GATEWAY_ROUTE_ATTR);
        return route == null ? "" : route.getId();
    }

    private record RequestBody(byte[] bytes, boolean tooLarge) {
    }

    /** The store could not be asked; the request is refused rather than forwarded unprotected. */
    private static final class StoreUnavailable extends RuntimeException {
        StoreUnavailable(Throwable cause) {
            super(cause);
        }
    }

    /** One guarded request, from its reservation attempt to its stored result. */
    private final class GuardedRequest implements CapturingResponse.Outcome {
        private final ServerWebExchange exchange;
        private final GatewayFilterChain chain;
        private final IdempotencyScope scope;
        private final Fingerprint fingerprint;
        private final byte[] body;
        private final OwnerToken owner = OwnerToken.random();
        private final long waitDeadline;

        GuardedRequest(ServerWebExchange exchange, GatewayFilterChain chain, IdempotencyScope scope,
                Fingerprint fingerprint, byte[] body) {
            this.exchange = exchange;
            this.chain = chain;
            this.scope = scope;
            this.fingerprint = fingerprint;
            this.body = body;
            this.waitDeadline = clock.millis() + policy.inFlightWait().toMillis();
        }

        Mono<Void> attempt() {
            return reserve().flatMap(this::answer)
                    .onErrorResume(StoreUnavailable.class, e -> {
                        log.warn("Idempotency store unavailable, refusing {} {} (scope {}): {}",
                                exchange.getRequest().getMethod(), exchange.getRequest().getPath(), scope.hash(),
                                e.getCause().toString());
                        return responses.error(exchange, GatewayError.storeUnavailable(policy.retryAfter()));
                    });
        }

        private Mono<Reservation> reserve() {
            return store.reserve(scope, fingerprint, owner, policy.inFlightLease(), remainingWait().toMillis() > 0)
                    .timeout(policy.storeTimeout())
                    .onErrorMap(StoreUnavailable::new);
        }

        private Mono<Void> answer(Reservation reservation) {
            if (reservation instanceof Reservation.Taken taken) {
                Decision decision = Decision.against(taken.existing(), fingerprint);
                if (decision instanceof Decision.Replay replay) {
                    return responses.replay(exchange, ReplayResponse.of(replay.response(), policy.replayStatus()));
                }
                if (decision instanceof Decision.ReplayUnavailable unavailable) {
                    return responses.error(exchange, GatewayError.replayUnavailable(unavailable.originalStatus(),
                            policy.maxStoredResponseBytes()));
                }
                if (decision instanceof Decision.PayloadMismatch) {
                    return responses.error(exchange, GatewayError.payloadMismatch());
                }
                return awaitSettle();
            }
            return forward();
        }

        /**
         * Waits, holding no thread, for the in-flight request to be completed or released, then asks again. The
         * waiter is registered before the second look, so a settle between the two cannot be missed.
         */
        private Mono<Void> awaitSettle() {
            Duration left = remainingWait();
            if (left.toMillis() <= 0) {
                return responses.error(exchange, GatewayError.stillInFlight(policy.retryAfter()));
            }
            SettleWaiter waiter = store.awaitSettle(scope);
            return reserve()
                    .flatMap(reservation -> stillInFlight(reservation)
                            ? waiter.settled().timeout(left, Mono.empty()).then(Mono.defer(this::attemptAgain))
                            : answer(reservation))
                    .doFinally(signal -> waiter.close());
        }

        private Mono<Void> attemptAgain() {
            return reserve().flatMap(this::answer);
        }

        private boolean stillInFlight(Reservation reservation) {
            return reservation instanceof Reservation.Taken taken
                    && Decision.against(taken.existing(), fingerprint) instanceof Decision.InFlight;
        }

        private Duration remainingWait() {
            return Duration.ofMillis(Math.max(0, waitDeadline - clock.millis()));
        }

        private Mono<Void> forward() {
            log.debug("Reserved scope {}; forwarding", scope.hash());
            CachedBodyRequest request = new CachedBodyRequest(exchange.getRequest(), body,
                    exchange.getResponse().bufferFactory());
            CapturingResponse response = new CapturingResponse(exchange.getResponse(),
                    policy.maxStoredResponseBytes(), this);
            ServerWebExchange forwarded = exchange.mutate().request(request).response(response).build();
            return chain.filter(forwarded)
                    // Nothing reached the response (a later filter answered on its own): there is no result.
                    .then(Mono.defer(() -> response.outcomeSeen() ? Mono.empty() : releaseQuietly()))
                    .onErrorResume(e -> upstreamFailed(e, response));
        }

        private Mono<Void> upstreamFailed(Throwable error, CapturingResponse response) {
            if (response.outcomeSeen() || exchange.getResponse().isCommitted()) {
                return Mono.error(error);
            }
            if (neverSent(error)) {
                log.info("Upstream unreachable for scope {}: {}; reservation released", scope.hash(), error.toString());
                return releaseQuietly().then(responses.error(exchange,
                        GatewayError.upstreamUnreachable(policy.retryAfter())));
            }
            // Sent, but no answer: the upstream may have acted. The reservation stays until its lease ends.
            log.warn("Outcome unknown for scope {}: {}", scope.hash(), error.toString());
            return responses.error(exchange, GatewayError.outcomeUnknown());
        }

        @Override
        public boolean isFinal(int status) {
            return policy.outcomePolicy().isFinal(status);
        }

        @Override
        public Mono<Void> notAResult() {
            return releaseQuietly();
        }

        @Override
        public Mono<Void> completed(int status, List<ResponseHeader> headers, byte[] responseBody,
                boolean bodyOmitted) {
            StoredResponse stored = new StoredResponse(status, policy.storableHeaders().filter(headers),
                    responseBody, bodyOmitted);
            log.debug("Storing {} for scope {}", stored, scope.hash());
            return detached(store.complete(scope, owner, stored, policy.retention())
                    .timeout(policy.storeTimeout())
                    .doOnNext(storedIt -> {
                        if (!storedIt) {
                            log.warn("Response for scope {} not stored: the reservation was no longer ours "
                                    + "(lease of {} expired?)", scope.hash(), policy.inFlightLease());
                        }
                    })
                    .onErrorResume(e -> {
                        log.error("Response for scope {} (status {}) could not be stored: {}", scope.hash(), status,
                                e.toString());
                        return Mono.just(false);
                    }))
                    .then();
        }

        @Override
        public void aborted(Throwable cause) {
            log.warn("Response for scope {} broke off before it was complete ({}); outcome unknown", scope.hash(),
                    cause == null ? "cancelled" : cause.toString());
        }

        private Mono<Void> releaseQuietly() {
            return detached(store.release(scope, owner)
                    .timeout(policy.storeTimeout())
                    .onErrorResume(e -> {
                        log.warn("Reservation for scope {} could not be released ({}); it lapses after {}",
                                scope.hash(), e.toString(), policy.inFlightLease());
                        return Mono.just(false);
                    }))
                    .then();
        }
    }

    /**
     * Runs a store call to its end even when the exchange is cancelled: a client that closes its connection right
     * after reading the response (as curl does) must not leave the record in flight.
     */
    private static <T> Mono<T> detached(Mono<T> work) {
        return Mono.defer(() -> Mono.fromFuture(work.toFuture(), true));
    }

    /** The request never left the gateway: connection refused, unknown host. */
    static boolean neverSent(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (cause instanceof ConnectException || cause instanceof UnknownHostException) {
                return true;
            }
        }
        return false;
    }
}
