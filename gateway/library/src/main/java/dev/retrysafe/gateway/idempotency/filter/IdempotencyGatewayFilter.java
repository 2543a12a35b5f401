package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.response.GatewayResponses;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.key.KeyCheck;
import dev.retrysafe.gateway.idempotency.key.KeySource;
import dev.retrysafe.gateway.idempotency.observability.RequestOutcome;
import dev.retrysafe.gateway.idempotency.observability.RequestReport;
import dev.retrysafe.gateway.idempotency.observability.RequestReports;
import dev.retrysafe.gateway.idempotency.reconcile.Reconciliation;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.LookupValues;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.StoredResponseUnreadable;
import dev.retrysafe.gateway.idempotency.tenant.TenantRejected;
import dev.retrysafe.gateway.idempotency.tenant.TenantResolver;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.NettyWriteResponseFilter;
import org.springframework.cloud.gateway.route.Route;
import org.springframework.cloud.gateway.support.RouteMetadataUtils;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The {@code Idempotency} route filter. A request's walk: key check, body read and fingerprint, atomic
 * reservation, then either the upstream (response streamed to the client and captured, then stored) or an answer
 * from the store (replay, mismatch, in flight, uncertain). Ordered before {@link NettyWriteResponseFilter} so
 * that the upstream response passes through the capturing decorator.
 */
public final class IdempotencyGatewayFilter implements GatewayFilter, Ordered {
    public static final int ORDER = NettyWriteResponseFilter.WRITE_RESPONSE_FILTER_ORDER - 1;
    private static final Logger log = LoggerFactory.getLogger(IdempotencyGatewayFilter.class);

    private final GuardedRoute route;
    private final RoutePolicy policy;
    private final TenantResolver tenants;
    private final GatewayResponses responses;
    private final IdempotencyEvents events;
    private final RequestReports reports;
    private final Optional<Duration> responseTimeout;

    /**
     * @param responseTimeout Spring Cloud Gateway's gateway-wide {@code httpclient.response-timeout}, if set: it
     *                        bounds how long a forwarded request may wait for its answer before it is abandoned
     */
    public IdempotencyGatewayFilter(RoutePolicy policy, IdempotencyFilterServices services,
            Optional<Duration> responseTimeout) {
        this.policy = policy;
        this.tenants = services.tenants();
        this.events = services.events();
        this.reports = services.reports();
        this.responseTimeout = responseTimeout;
        this.responses = new GatewayResponses(services.clock(), policy.contract());
        this.route = new GuardedRoute(policy, services.store(), services.events(), services.leases(), responses,
                services.clock(), services.settles());
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
        RequestReport report = reports.start(exchange, route(exchange).map(Route::getId).orElse(""));
        return guard(exchange, chain, report).doFinally(report::clientSideEnded);
    }

    private Mono<Void> guard(ServerWebExchange exchange, GatewayFilterChain chain, RequestReport report) {
        ServerHttpRequest request = exchange.getRequest();
        // A key the client sends is checked before its body is read; one taken from the body, once it is.
        Optional<IdempotencyKey> sentKey = Optional.empty();
        if (policy.keySource() instanceof KeySource.Header header) {
            KeyCheck check = header.check(policy.keyPolicy(), request.getHeaders().get(header.name()));
            if (check instanceof KeyCheck.Rejected rejected) {
                return reject(exchange, report, RequestOutcome.INVALID_KEY, keyRejected(rejected));
            }
            sentKey = Optional.of(((KeyCheck.Valid) check).key());
        }
        if (request.getHeaders().getContentLength() > policy.maxRequestBytes()) {
            return reject(exchange, report, RequestOutcome.TOO_LARGE,
                    GatewayError.bodyTooLarge(policy.maxRequestBytes()));
        }
        Optional<IdempotencyKey> keyFromHeader = sentKey;
        return RequestBody.read(request, policy).flatMap(body -> {
            if (body.refused().isPresent()) {
                RequestBody.Refusal refusal = body.refused().get();
                return reject(exchange, report, refusal.outcome(), refusal.error());
            }
            KeyCheck check = keyFromHeader.<KeyCheck>map(KeyCheck.Valid::new)
                    .orElseGet(() -> ((KeySource.BodyField) policy.keySource()).keyIn(body.bytes()));
            if (check instanceof KeyCheck.Rejected rejected) {
                return reject(exchange, report, RequestOutcome.INVALID_KEY, keyRejected(rejected));
            }
            IdempotencyKey key = ((KeyCheck.Valid) check).key();
            // The whole request is here: from now on a client that hangs up cancels nothing. Its request is
            // reserved, forwarded and settled as if it were still listening, so the record tells what happened.
            report.detachFromClient();
            return detached(tenants.resolve(exchange)
                    .defaultIfEmpty(TenantResolver.ANONYMOUS)
                    .flatMap(tenant -> guarded(new GuardedRequest(exchange, chain, scope(exchange, tenant, key),
                            OwnerToken.random(), fingerprints(request, body.bytes()), body.bytes(),
                            route(exchange).map(Route::getUri).map(URI::toString).orElse(""), report)))
                    .onErrorResume(TenantRejected.class, e -> reject(exchange, report, RequestOutcome.INVALID_TENANT,
                            GatewayError.invalidTenant(e.header())))
                    .doFinally(report::detachedWorkEnded));
        });
    }

    private static GatewayError keyRejected(KeyCheck.Rejected rejected) {
        return switch (rejected.fault()) {
            case MISSING -> GatewayError.keyMissing(rejected.message());
            case MALFORMED -> GatewayError.invalidKey(rejected.message());
        };
    }

    /**
     * Refuses a request before its scope is known. The tenant is still resolved, for the log line only, so that
     * support can tell one tenant's broken client from a general problem.
     */
    private Mono<Void> reject(ServerWebExchange exchange, RequestReport report, RequestOutcome outcome,
            GatewayError error) {
        Answer.Refusal refusal = new Answer.Refusal(outcome, error);
        return tenants.resolve(exchange)
                .defaultIfEmpty(TenantResolver.ANONYMOUS)
                .doOnNext(report::tenant)
                .onErrorResume(e -> Mono.empty())
                .then(Mono.defer(() -> refuse(exchange, report, refusal)));
    }

    /** A refusal, before the scope is known or after: the report's outcome and the error envelope, together. */
    private Mono<Void> refuse(ServerWebExchange exchange, RequestReport report, Answer.Refusal refusal) {
        report.outcome(refusal.outcome());
        return responses.error(exchange, refusal.error());
    }

    /**
     * The Content-Type goes to the fingerprinter as sent: parsing it here would turn a malformed one (a client's
     * mistake, "application/") into an exception and a 500; the fingerprinter treats anything it cannot read as
     * not JSON, and the upstream judges the request. The route's intent headers go with every value as sent.
     */
    private Fingerprints fingerprints(ServerHttpRequest request, byte[] body) {
        HttpHeaders headers = request.getHeaders();
        return policy.fingerprinter().fingerprints(request.getMethod().name(), request.getURI().getRawPath(),
                request.getURI().getRawQuery(), headers.getFirst(HttpHeaders.CONTENT_TYPE), body,
                name -> Optional.ofNullable(headers.get(name)).orElse(List.of()));
    }

    /** Scoped by the route's operation, else by its id. */
    private IdempotencyScope scope(ServerWebExchange exchange, String tenant, IdempotencyKey key) {
        String routeId = route(exchange).map(Route::getId).orElse("");
        return new IdempotencyScope(tenant, policy.operationOr(routeId), routeId, key);
    }

    private static Optional<Route> route(ServerWebExchange exchange) {
        return Optional.ofNullable(exchange.getAttribute(ServerWebExchangeUtils.GATEWAY_ROUTE_ATTR));
    }

    private Mono<Void> guarded(GuardedRequest request) {
        request.report().scope(request.scope());
        Optional<LookupValues> lookup = lookup(request);
        return new ReservationLoop(route, request, lookup).answer()
                .flatMap(answer -> apply(answer, request, lookup));
    }

    /** The one place an answer becomes a response, the report's outcome and, where there is one, an event. */
    private Mono<Void> apply(Answer answer, GuardedRequest request, Optional<LookupValues> lookup) {
        ServerWebExchange exchange = request.exchange();
        RequestReport report = request.report();
        if (answer instanceof Answer.Forward) {
            return new UpstreamExchange(route, request, lookup).send(request.chain(), stallLimits(exchange));
        }
        if (answer instanceof Answer.Replay replay) {
            report.outcome(RequestOutcome.REPLAY);
            return responses.replay(exchange, replay.response())
                    .onErrorResume(StoredResponseUnreadable.class,
                            e -> apply(new Answer.ReplayUnreadable(e), request, lookup));
        }
        if (answer instanceof Answer.Refusal refusal) {
            return refuse(exchange, report, refusal);
        }
        if (answer instanceof Answer.ReplayUnreadable unreadable) {
            events.replayUnreadable(request.scope(), unreadable.cause());
            report.outcome(RequestOutcome.REPLAY_UNREADABLE);
            return responses.error(exchange, GatewayError.replayUnreadable(unreadable.cause().originalStatus()));
        }
        Answer.StoreUnavailable unavailable = (Answer.StoreUnavailable) answer;
        if (policy.forwardWhenStoreUnavailable()) {
            events.forwardedUnprotected(request.scope(), unavailable.cause());
            report.outcome(RequestOutcome.FORWARDED_UNPROTECTED);
            return request.chain().filter(exchange.mutate().request(new CachedBodyRequest(exchange.getRequest(),
                    request.body(), exchange.getResponse().bufferFactory())).build());
        }
        events.storeUnavailable(request.scope(), unavailable.cause());
        report.outcome(RequestOutcome.STORE_UNAVAILABLE);
        return responses.error(exchange, GatewayError.storeUnavailable(policy.retryAfter()));
    }

    /**
     * On a reconciling route, the values its lookup names, kept with the record; none when the request lacks one
     * (it is then settled by an operator if its outcome becomes unknown).
     */
    private Optional<LookupValues> lookup(GuardedRequest request) {
        return policy.reconciliation()
                .flatMap(reconciliation -> reconciliation.template().values(request.scope().key().value(),
                        request.body()).map(values -> withForwardedHeaders(values, reconciliation, request)))
                .map(values -> new LookupValues(values, policy.lookupAfter(responseTimeout(request.exchange()))));
    }

    /** The original request's headers the route's lookups carry, kept only when the route names them. */
    private static Map<String, String> withForwardedHeaders(Map<String, String> values, Reconciliation reconciliation,
            GuardedRequest request) {
        if (reconciliation.forwardHeaders().isEmpty()) {
            return values;
        }
        Map<String, String> kept = new LinkedHashMap<>(values);
        HttpHeaders headers = request.exchange().getRequest().getHeaders();
        for (String name : reconciliation.forwardHeaders()) {
            List<String> sent = headers.get(name);
            if (sent != null && !sent.isEmpty()) {
                kept.put(Reconciliation.FORWARDED + name, String.join(", ", sent));
            }
        }
        return kept;
    }

    /** The route's own response timeout, else the gateway's, if any. */
    private Optional<Duration> responseTimeout(ServerWebExchange exchange) {
        Object routeTimeout = route(exchange).map(r -> r.getMetadata().get(RouteMetadataUtils.RESPONSE_TIMEOUT_ATTR))
                .orElse(null);
        return routeTimeout instanceof Number millis && millis.longValue() >= 0
                ? Optional.of(Duration.ofMillis(millis.longValue()))
                : responseTimeout;
    }

    /**
     * How long a forwarded exchange may show no progress before it is abandoned as UNCERTAIN. Awaiting the answer:
     * the route's response timeout ({@code response-timeout} route metadata, else the gateway-wide
     * {@code httpclient.response-timeout}) plus one lease, so that Spring Cloud Gateway's own timeout normally ends
     * it first; without a timeout, no limit. Once the answer is coming: that timeout plus a renewal period, at least
     * one lease. This bounds what no timeout covers, such as a client that stopped reading.
     */
    private UpstreamExchange.StallLimits stallLimits(ServerWebExchange exchange) {
        Duration lease = policy.inFlightLease();
        Optional<Duration> timeout = responseTimeout(exchange);
        if (timeout.isEmpty()) {
            return new UpstreamExchange.StallLimits(UpstreamExchange.StallLimits.NO_LIMIT, lease);
        }
        Duration betweenBytes = timeout.get().plus(lease.dividedBy(3));
        return new UpstreamExchange.StallLimits(timeout.get().plus(lease),
                betweenBytes.compareTo(lease) > 0 ? betweenBytes : lease);
    }

    /**
     * Runs work to its end even when the exchange is cancelled: neither a client that closes its connection
     * right after the response (as curl does) nor one that hangs up early may cut short the upstream exchange or
     * the store call that follows it. The subscriber's context (security context, trace) goes along with it.
     */
    static <T> Mono<T> detached(Mono<T> work) {
        return Mono.deferContextual(context -> Mono.fromFuture(work.contextWrite(context).toFuture(), true));
    }
}
