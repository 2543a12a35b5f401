package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.store.LeaseRenewals;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.response.GatewayResponses;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.observability.RequestOutcome;
import dev.retrysafe.gateway.idempotency.observability.RequestReport;
import dev.retrysafe.gateway.idempotency.process.ProcessTracking;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.CompletionResult;
import dev.retrysafe.gateway.idempotency.store.LookupValues;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.StoreCall;
import dev.retrysafe.gateway.idempotency.store.UncertainMark;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.http.HttpStatus;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One reserved request's exchange with the upstream, from the reservation to the one store call that settles it.
 * <pre>
 * RESERVED -> SENDING -> ANSWERED -> STORED       the final answer's body ended: stored for replay
 *                 |           '----> UNCERTAIN    its body broke off, or the exchange stalled
 *                 |---------------> RELEASED      never sent (connection refused), not a result, or no answer
 *                 '---------------> UNCERTAIN     sent, then a timeout, a broken connection or a stall
 * </pre>
 * Every transition is one method; the terminal ones race through one compare-and-set, so whatever happens
 * (a client that hangs up, an upstream that breaks, the stall watchdog firing at the same moment) exactly one
 * store call settles the record. The exchange runs detached from the client: a client that goes away after its
 * request's last byte does not cancel it. While it lasts, its lease is renewed, as long as it shows progress.
 */
final class UpstreamExchange {
    private static final Logger log = LoggerFactory.getLogger(UpstreamExchange.class);

    enum State {
        RESERVED, SENDING, ANSWERED, STORED, RELEASED, UNCERTAIN;

        boolean terminal() {
            return this == STORED || this == RELEASED || this == UNCERTAIN;
        }
    }

    private final ServerWebExchange exchange;
    private final IdempotencyScope scope;
    private final OwnerToken owner;
    private final Fingerprints fingerprints;
    private final byte[] body;
    private final String upstream;
    private final Optional<LookupValues> lookup;
    private final RequestReport report;
    private final RoutePolicy policy;
    private final IdempotencyStore store;
    private final IdempotencyEvents events;
    private final LeaseRenewals leases;
    private final GatewayResponses responses;
    private final PendingSettles settles;
    private final AtomicReference<State> state = new AtomicReference<>(State.RESERVED);
    private final Sinks.Empty<Void> settled = Sinks.empty();
    /** The client's answer may end: a result's store call began, or anything else is settled. */
    private final Sinks.Empty<Void> answerEnd = Sinks.empty();
    private final Sinks.Empty<Void> stalled = Sinks.empty();
    private final Sinks.Empty<Void> nothingToLink = Sinks.empty();
    private volatile long lastProgressNanos = System.nanoTime();

    /** @param lookup on a reconciling route, the values its lookup names (a record written anew keeps them) */
    UpstreamExchange(GuardedRoute route, GuardedRequest request, Optional<LookupValues> lookup) {
        this.lookup = lookup;
        this.exchange = request.exchange();
        this.scope = request.scope();
        this.owner = request.owner();
        this.fingerprints = request.fingerprints();
        this.body = request.body();
        this.upstream = request.upstream();
        this.report = request.report();
        this.policy = route.policy();
        this.store = route.store();
        this.events = route.events();
        this.leases = route.leases();
        this.responses = route.responses();
        this.settles = route.settles();
    }

    /**
     * How long an exchange may show no progress. Awaiting the answer's head, a live but slow upstream is waited for
     * as long as the route's response timeout allows ({@link #NO_LIMIT} without one, as Spring Cloud Gateway
     * itself waits); once the answer is coming, its bytes must keep coming.
     */
    record StallLimits(Duration awaitingAnswer, Duration betweenAnswerBytes) {
        static final Duration NO_LIMIT = Duration.ofNanos(Long.MAX_VALUE);
    }

    State state() {
        return state.get();
    }

    /**
     * Completes once the exchange is settled (stored, released or marked uncertain), or once the settle deadline
     * has passed since it began settling ({@link RoutePolicy#settleDeadline()}): what waits for it (an answer the
     * gateway writes after a release or an UNCERTAIN mark, a held 202) waits for the store, but not for a store that
     * does not answer; the store call goes on in the background. A stored result's answer does not wait at all
     * ({@link #answerMayEnd()}).
     */
    Mono<Void> settled() {
        return settled.asMono();
    }

    /**
     * Completes when the client's answer may end. A result being stored does not wait for its store call: the client
     * has every byte of it, and on a kept-alive connection the next request would wait that Redis round trip too. A
     * retry meanwhile finds the record IN_FLIGHT and waits for it as for any duplicate; shutdown waits for the call
     * ({@link PendingSettles}). Anything else (a release, an UNCERTAIN mark) is settled before the answer ends, as
     * before: a retry right after it must find the key free, or the doubt recorded.
     */
    Mono<Void> answerMayEnd() {
        return answerEnd.asMono();
    }

    /**
     * Whether an answer with this status is held back until {@link #linked()}: a tracked route's successful answer
     * may name a process, whose link must exist before the client can read the process's status.
     */
    boolean holdsUntilLinked(int status) {
        return policy.processTracking().isPresent() && status >= 200 && status < 300;
    }

    /**
     * Completes once a held answer may go: its record and process link are stored, or it names no process, or the
     * exchange was settled another way; at the latest after the record's write and the link had one store timeout
     * each, so a slow store delays the answer but never keeps it (the link goes on as before).
     */
    Mono<Void> linked() {
        return Mono.firstWithSignal(nothingToLink.asMono(), settled())
                .timeout(policy.storeTimeout().multipliedBy(2), Mono.empty());
    }

    /**
     * RESERVED -> SENDING: forwards the request and ends when the client has its answer and the record is settled.
     *
     * @param stallLimits how long the exchange may go without progress before it is abandoned and marked UNCERTAIN
     */
    Mono<Void> send(GatewayFilterChain chain, StallLimits stallLimits) {
        if (!state.compareAndSet(State.RESERVED, State.SENDING)) {
            return Mono.error(new IllegalStateException("An upstream exchange is sent once, was " + state.get()));
        }
        CachedBodyRequest request = new CachedBodyRequest(exchange.getRequest(), body,
                exchange.getResponse().bufferFactory());
        CapturingResponse response = new CapturingResponse(exchange.getResponse(), policy.maxStoredResponseBytes(),
                this);
        ServerWebExchange forwarded = exchange.mutate().request(request).response(response).build();
        Mono<Void> upstreamCall = chain.filter(forwarded)
                .then(Mono.defer(this::chainEnded))
                .onErrorResume(this::failed);
        Mono<Void> abandoned = stalled.asMono().then(Mono.defer(this::answerStall));
        return Mono.defer(() -> {
            progress();
            Runnable forwarding = report.forwarding();
            LeaseRenewals.Hold lease = leases.hold(scope, owner, policy.inFlightLease(), policy.storeTimeout(),
                    new LeaseRenewals.Watch(() -> lastProgressNanos,
                            () -> state.get() == State.SENDING ? stallLimits.awaitingAnswer()
                                    : stallLimits.betweenAnswerBytes(), this::stall));
            // The first to end wins: a stalled exchange is cancelled (SCG closes its upstream connection).
            return Mono.firstWithSignal(upstreamCall, abandoned).doFinally(signal -> {
                lease.release();
                forwarding.run();
                report.upstreamExchangeEnded();
            });
        });
    }

    /** Something moved: bytes of the answer arrived. Keeps the stall watchdog away. */
    void progress() {
        lastProgressNanos = System.nanoTime();
    }

    /**
     * SENDING -> ANSWERED, or -> RELEASED when the status is not a result (release-on-status): then the release
     * is done before the answer is passed on, so that a retry right after it finds the key free.
     *
     * @return whether the answer is a result to capture and store
     */
    boolean answered(int status) {
        progress();
        report.upstreamAnswered(status);
        if (!policy.outcomePolicy().isFinal(status)) {
            settle(State.RELEASED, () -> {
                report.outcome(RequestOutcome.RELEASED);
                return release();
            });
            return false;
        }
        return state.compareAndSet(State.SENDING, State.ANSWERED) || state.get() == State.ANSWERED;
    }

    /** ANSWERED -> STORED: the whole body came from the upstream. */
    void bodyEnded(int status, List<ResponseHeader> headers, byte[] responseBody, boolean bodyOmitted) {
        settle(State.STORED, () -> {
            report.outcome(RequestOutcome.FIRST);
            return complete(status, headers, responseBody, bodyOmitted);
        });
    }

    /** ANSWERED -> UNCERTAIN: the body broke off. */
    void bodyBroke(Throwable cause, long bytesSeen) {
        settle(State.UNCERTAIN, () -> {
            report.outcome(RequestOutcome.OUTCOME_UNKNOWN);
            return markUncertain("the response broke off after " + bytesSeen + " body bytes"
                    + (cause == null ? "" : ": " + cause));
        });
    }

    /** The filter chain ended. Without any answer (a later filter answered on its own) there is no result. */
    private Mono<Void> chainEnded() {
        settle(State.RELEASED, () -> {
            report.outcome(RequestOutcome.RELEASED);
            return release();
        });
        return answerMayEnd();
    }

    /** The chain failed: before an answer this is the upstream call failing, sent or not. */
    private Mono<Void> failed(Throwable error) {
        State now = state.get();
        if (now == State.ANSWERED || exchange.getResponse().isCommitted()) {
            return settled().then(Mono.error(error));
        }
        if (neverSent(error)) {
            if (!settle(State.RELEASED, () -> {
                events.upstreamUnreachable(scope, error);
                report.outcome(RequestOutcome.UPSTREAM_UNREACHABLE);
                return release();
            })) {
                return settled().then(Mono.error(error));
            }
            return settled().then(responses.error(exchange, GatewayError.upstreamUnreachable(policy.retryAfter())));
        }
        boolean timedOut = timedOut(error);
        String reason = timedOut
                ? "no response within the gateway's response timeout after the request was sent"
                : "connection failed after the request was sent, before a response: " + error;
        if (!settle(State.UNCERTAIN, () -> {
            report.outcome(RequestOutcome.OUTCOME_UNKNOWN);
            return markUncertain(reason);
        })) {
            return settled().then(Mono.error(error));
        }
        return settled().then(responses.error(exchange,
                timedOut ? GatewayError.outcomeUnknownTimeout() : GatewayError.outcomeUnknownBroken()));
    }

    /** Called by the lease watchdog: no progress within the stall limit. SENDING/ANSWERED -> UNCERTAIN. */
    private void stall(Duration quietFor) {
        if (settle(State.UNCERTAIN, () -> {
            report.outcome(RequestOutcome.OUTCOME_UNKNOWN);
            return markUncertain("the upstream exchange made no progress for " + quietFor.toMillis()
                    + " ms after the request was handed to the upstream; abandoned");
        }) || state.get().terminal()) {
            // Also when already settled: an exchange stuck after its store call (a write to a client that is
            // gone) must still end, or it holds memory and the in-flight gauge forever.
            stalled.tryEmitEmpty();
        }
    }

    private Mono<Void> answerStall() {
        if (exchange.getResponse().isCommitted()) {
            // Part of an answer went out: the client must see it broken, not short.
            return settled().then(Mono.error(new TimeoutException("upstream exchange stalled")));
        }
        return settled().then(responses.error(exchange, GatewayError.outcomeUnknownTimeout()));
    }

    /**
     * Moves to a terminal state and runs its one store call, unless another path settled first.
     *
     * @return whether this call settled the exchange
     */
    private boolean settle(State terminal, Supplier<Mono<Void>> storeCall) {
        State now;
        do {
            now = state.get();
            if (now.terminal()) {
                return false;
            }
        } while (!state.compareAndSet(now, terminal));
        Mono<Void> call;
        try {
            call = storeCall.get();
        } catch (RuntimeException e) {
            call = Mono.error(e);
        }
        Duration deadline = policy.settleDeadline();
        Disposable clientDeadline = Mono.delay(deadline).subscribe(tick -> {
            answerEnd.tryEmitEmpty();
            if (settled.tryEmitEmpty() == Sinks.EmitResult.OK) {
                log.warn("Settling scope {} as {} takes longer than {} ms: what waits for it (the client's answer, a "
                        + "held 202) goes on now, the store call goes on", scope.hash(), terminal, deadline.toMillis());
            }
        });
        settles.begin();
        call.onErrorResume(e -> {
            log.error("Settling scope {} as {} failed: {}", scope.hash(), terminal, e.toString());
            return Mono.empty();
        }).doFinally(signal -> {
            clientDeadline.dispose();
            settled.tryEmitEmpty();
            answerEnd.tryEmitEmpty();
            settles.end();
        }).subscribe();
        if (terminal == State.STORED) {
            answerEnd.tryEmitEmpty();
        }
        return true;
    }

    private Mono<Void> complete(int status, List<ResponseHeader> headers, byte[] responseBody, boolean bodyOmitted) {
        StoredResponse stored = new StoredResponse(status, policy.storableHeaders().filter(headers), responseBody,
                bodyOmitted);
        Optional<ProcessTracking> tracking = policy.processTracking();
        Optional<String> unfinishedProcess = tracking.flatMap(t -> t.unfinishedProcess(headers, stored));
        if (unfinishedProcess.isEmpty()) {
            nothingToLink.tryEmitEmpty();
        }
        Duration ttl = unfinishedProcess.isPresent() ? tracking.get().maxRetention() : policy.retention();
        Completion completion = new Completion(scope, owner, fingerprints, upstream, stored, ttl, unfinishedProcess);
        // Retried for as long as the record may exist, as a release or an UNCERTAIN mark is: given up after a few
        // seconds (as it once was), an answer the client already has left the record IN_FLIGHT, then "outcome
        // unknown" (the 100,000-exchange store torture found 8 such keys after chained Redis faults). The response
        // is held meanwhile: only exchanges under way when Redis went away retry, each a bounded body.
        return StoreCall.retriedFor(policy.settleRetrySpan(), policy.storeTimeout(), () -> store.complete(completion))
                .doOnNext(result -> events.stored(scope, status, result))
                .onErrorResume(e -> {
                    events.storeLost(scope, status, e);
                    return Mono.just(CompletionResult.NOT_OWNER);
                })
                .then();
    }

    /**
     * Tried again until Redis answers, for as long as the record may exist ({@link RoutePolicy#settleRetrySpan()}):
     * a lapsed lease would also leave it UNCERTAIN, but with a guessed reason, and IN_FLIGHT until someone looks.
     */
    private Mono<Void> markUncertain(String reason) {
        return StoreCall.retriedFor(policy.settleRetrySpan(), policy.storeTimeout(),
                        () -> store.markUncertain(new UncertainMark(scope, owner, reason, policy.unsettledRecordTtl(),
                                fingerprints, upstream, lookup)))
                .doOnNext(result -> events.markedUncertain(scope, reason, result))
                .onErrorResume(e -> {
                    log.error("Scope {} could not be marked uncertain while its record may exist ({}); it becomes "
                            + "uncertain as its lease lapses", scope.hash(), e.toString());
                    return Mono.empty();
                })
                .then();
    }

    /**
     * Tried again until Redis answers, for as long as the record may exist ({@link RoutePolicy#settleRetrySpan()}):
     * given up, a request never sent (or answered with no result) would lapse to UNCERTAIN and refuse every retry as
     * "outcome unknown". The client does not wait for it beyond the settle deadline.
     */
    private Mono<Void> release() {
        return StoreCall.retriedFor(policy.settleRetrySpan(), policy.storeTimeout(), () -> store.release(scope, owner))
                .doOnNext(result -> events.released(scope, result))
                .onErrorResume(e -> {
                    log.warn("Reservation for scope {} could not be released while its record may exist ({}); it "
                            + "lapses to uncertain", scope.hash(), e.toString());
                    return Mono.empty();
                })
                .then();
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

    static boolean timedOut(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (cause instanceof TimeoutException || (cause instanceof ResponseStatusException status
                    && status.getStatusCode().value() == HttpStatus.GATEWAY_TIMEOUT.value())) {
                return true;
            }
        }
        return false;
    }
}
