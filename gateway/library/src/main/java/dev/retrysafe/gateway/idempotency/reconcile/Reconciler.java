package dev.retrysafe.gateway.idempotency.reconcile;

import dev.retrysafe.gateway.idempotency.background.ClaimRound;
import dev.retrysafe.gateway.idempotency.background.FleetWorker;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.operator.SettlementAudit;
import dev.retrysafe.gateway.idempotency.process.ProcessTracking;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StorableHeaders;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import dev.retrysafe.gateway.idempotency.store.StoreCall;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue.DueLookup;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue.LookupResult;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.web.reactive.function.BodyExtractors;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Settles UNCERTAIN records of reconciling routes by asking their upstream, as the seed asks: "query the provider by
 * that reference and reconcile the result; while there is no confirmation, keep it pending". The records to ask about
 * are the fleet's ({@link ReconcileQueue}): every instance with a reconciling route takes its share of the due
 * lookups, whichever instance saw the request, each under a claim, so two instances never both ask about one record
 * and a dying one loses none. Found: the lookup's answer becomes the stored response (replayed with
 * {@value #RECONCILED_HEADER}: true). Not found: the record is released, the client's retry is forwarded. Anything
 * else: asked again later, the delay doubling up to a maximum. Each settlement is in the operators' audit log.
 */
public final class Reconciler extends FleetWorker {
    private static final Logger log = LoggerFactory.getLogger(Reconciler.class);
    /** On a response completed from a lookup, and on every replay of it. */
    public static final String RECONCILED_HEADER = "Idempotency-Reconciled";
    static final String WHO = "reconciler";
    static final int BATCH = 32;
    /** Longest a lookup may take; a claim lasts longer, so that no other instance asks meanwhile. */
    static final Duration LOOKUP_TIMEOUT = Duration.ofSeconds(5);
    static final Duration CLAIM = LOOKUP_TIMEOUT.multipliedBy(3);

    private final Optional<ReconcileQueue> queue;
    private final WebClient http;
    private final Duration interval;
    private final Duration firstRetry;
    private final Duration maxRetry;
    private final Duration storeTimeout;
    private final Duration restoreInterval;
    private final IdempotencyMetrics metrics;
    private final Map<String, RouteLookup> routes = new ConcurrentHashMap<>();
    private final AtomicLong rounds = new AtomicLong();
    private final AtomicLong lookups = new AtomicLong();
    /** Routes whose refused credentials were said at WARN: once each. */
    private final Set<String> credentialsWarned = ConcurrentHashMap.newKeySet();

    /**
     * @param interval   how often this instance looks for due lookups
     * @param firstRetry the delay after a lookup that told nothing; it doubles after each such lookup, up to
     *                   {@code maxRetry}
     * @param storeTimeout how long a claim or a settle may take: a Redis that does not answer holds no round longer
     * @param restoreInterval how often the fleet checks the queue's directory against its slots
     *                   ({@link #restoreLostSlotsNow()})
     */
    public Reconciler(Optional<ReconcileQueue> queue, WebClient http, Duration interval, Duration firstRetry,
            Duration maxRetry, Duration storeTimeout, Duration restoreInterval, IdempotencyMetrics metrics) {
        super("reconcile queue", interval, restoreInterval, queue.isPresent());
        this.queue = queue;
        this.http = http;
        this.interval = interval;
        this.firstRetry = firstRetry;
        this.maxRetry = maxRetry;
        this.storeTimeout = storeTimeout;
        this.metrics = metrics;
        this.restoreInterval = restoreInterval;
    }

    /**
     * What a route's lookups need to settle a record: its reconciliation, which headers may be stored, the largest
     * body kept, how long a found result is replayed, and how the route's processes report their end (a found
     * answer naming an unfinished process keeps the key bound until it ends, as the 202 it stands for would).
     */
    public record RouteLookup(Reconciliation reconciliation, StorableHeaders storableHeaders, int maxStoredBytes,
            Duration retention, Optional<ProcessTracking> processTracking) {
    }

    /** A route that reconciles: the first one starts this instance's share of the lookups. */
    public void reconcile(String routeId, RouteLookup route) {
        routes.put(routeId, route);
        metrics.reconciling(routeId);
        routeAdded(routeId, "an operator settles its UNCERTAIN records");
    }

    @Override
    protected Mono<Integer> dueNow() {
        return reconcileDueNow();
    }

    /**
     * One round: the due lookups are claimed, made, and their records settled, and claimed again as long as a claim
     * found some and the round is within the claims' lease ({@link ClaimRound}), as process polls are: one claim of
     * 32 a second left a backlog of UNCERTAIN records (after a burst of upstream timeouts) looked up at 32 a second.
     * Emits how many were claimed.
     */
    Mono<Integer> reconcileDueNow() {
        return ClaimRound.whileFound(this::claimDueOnce, CLAIM, this::closing)
                .doFinally(signal -> rounds.incrementAndGet());
    }

    /**
     * Puts back in the queue's directory what a Redis failover lost of it, once every restore interval for the whole
     * fleet, so an UNCERTAIN record so orphaned is looked up at most that much later than its lookup was due (a
     * retry meeting it long overdue also queues it again, see idempotency_reserve.lua).
     */
    @Override
    protected Mono<Integer> restoreLostSlotsNow() {
        return queue.map(q -> restoreLogged(() -> StoreCall.within(CLAIM, () -> q.restoreLostSlots(restoreInterval))))
                .orElse(Mono.just(0));
    }

    private Mono<Integer> claimDueOnce() {
        if (closing() || queue.isEmpty()) {
            return Mono.just(0);
        }
        // Claims given up on may still be made in Redis: they lapse, and another round asks.
        return StoreCall.within(storeTimeout, () -> queue.get().claimDue(BATCH, CLAIM).collectList())
                .flatMapMany(Flux::fromIterable)
                .flatMap(due -> lookUp(due).thenReturn(1), 8)
                .reduce(0, Integer::sum)
                .onErrorResume(e -> {
                    if (!closing()) {
                        log.warn("Looking for due reconciliations failed: {}", e.toString());
                    }
                    return Mono.just(0);
                });
    }

    private Mono<Void> lookUp(DueLookup due) {
        RouteLookup route = routes.get(due.routeId());
        if (closing() || route == null) {
            // A route this instance does not have (yet): its claim lapses, an instance that has it asks.
            return Mono.empty();
        }
        Optional<URI> url = url(due, route.reconciliation().template());
        if (url.isEmpty()) {
            return settle(due, route, new LookupResult.Failed(firstRetry, maxRetry), "failed");
        }
        lookups.incrementAndGet();
        return http.get().uri(url.get())
                .headers(headers -> credentials(due, route.reconciliation()).forEach(headers::set))
                .exchangeToMono(answer -> body(answer, route.maxStoredBytes()).map(body -> {
                    int status = answer.statusCode().value();
                    LookupResult result = result(route, status, headers(answer), body);
                    return new Looked(result, refusedCredentials(due.routeId(), route.reconciliation(), status)
                            ? "credentials" : outcome(result));
                }))
                .timeout(LOOKUP_TIMEOUT)
                .onErrorResume(e -> {
                    log.debug("Lookup of scope {} failed: {}", due.scopeHash(), e.toString());
                    return Mono.just(new Looked(new LookupResult.Failed(firstRetry, maxRetry), "failed"));
                })
                .flatMap(looked -> settle(due, route, looked.result(), looked.outcome()));
    }

    private record Looked(LookupResult result, String outcome) {
    }

    /** The route's own lookup headers, then those kept from the original request (which win: they are its). */
    private static Map<String, String> credentials(DueLookup due, Reconciliation reconciliation) {
        Map<String, String> headers = new LinkedHashMap<>(reconciliation.headers());
        due.values().forEach((name, value) -> {
            if (name.startsWith(Reconciliation.FORWARDED)) {
                headers.put(name.substring(Reconciliation.FORWARDED.length()), value);
            }
        });
        return headers;
    }

    /**
     * 401 or 403 (unless the route says that is "not found"): the backend wants credentials the lookup lacks, which
     * no retry fixes. Still asked again with back-off (a token may be rotated meanwhile), but counted apart and said
     * once per route, at WARN, naming the args that fix it; never the values.
     */
    private boolean refusedCredentials(String routeId, Reconciliation reconciliation, int status) {
        if ((status != 401 && status != 403) || status == reconciliation.notFoundStatus()) {
            return false;
        }
        if (credentialsWarned.add(routeId)) {
            log.warn("Lookups of route {} are refused with {}: the backend wants credentials. Give them with "
                    + "reconcile-headers (e.g. 'Authorization: Bearer ${BACKEND_TOKEN}') or reconcile-forward-headers; "
                    + "its UNCERTAIN records are looked up again with back-off meanwhile, counted as "
                    + "idempotency.reconciliations{outcome=credentials}", routeId, status);
        }
        return true;
    }

    /**
     * The answer's body up to the route's stored-response limit, read here: WebClient's own buffer stops at 256 KB,
     * and a found answer above it was a failed lookup, asked again until its retention ended. Longer than the limit:
     * empty, the answer stored without its body as a forwarded one would be.
     */
    private static Mono<Optional<byte[]>> body(ClientResponse answer, int limit) {
        return DataBufferUtils.join(answer.body(BodyExtractors.toDataBuffers()), limit)
                .map(buffer -> {
                    byte[] bytes = new byte[buffer.readableByteCount()];
                    buffer.read(bytes);
                    DataBufferUtils.release(buffer);
                    return Optional.of(bytes);
                })
                .defaultIfEmpty(Optional.of(new byte[0]))
                .onErrorResume(DataBufferLimitException.class, tooLong -> Mono.just(Optional.empty()));
    }

    private LookupResult result(RouteLookup route, int status, List<ResponseHeader> headers, Optional<byte[]> body) {
        Reconciliation reconciliation = route.reconciliation();
        if (status == reconciliation.foundStatus()) {
            List<ResponseHeader> stored = new ArrayList<>(route.storableHeaders().filter(headers));
            stored.removeIf(header -> header.named(RECONCILED_HEADER));
            stored.add(new ResponseHeader(RECONCILED_HEADER, "true"));
            boolean omitted = body.isEmpty();
            StoredResponse response = new StoredResponse(status, stored, body.orElse(new byte[0]), omitted);
            Optional<ProcessTracking> tracking = route.processTracking();
            Optional<String> process = tracking.flatMap(t -> t.unfinishedProcess(headers, response));
            return new LookupResult.Found(response, process.isPresent() ? tracking.get().maxRetention()
                    : route.retention(), "the upstream's lookup answered " + status + ": found, its answer is the "
                    + "result" + process.map(id -> ", its process " + id + " still running").orElse(""), process);
        }
        if (status == reconciliation.notFoundStatus()) {
            return new LookupResult.NotFound("the upstream's lookup answered " + status
                    + ": the request never reached it, released so that the client's retry is forwarded");
        }
        return new LookupResult.Failed(firstRetry, maxRetry);
    }

    private Mono<Void> settle(DueLookup due, RouteLookup route, LookupResult result, String outcome) {
        // A settle given up on is a compare-and-set that may have run: if not, the claim lapses and it is asked again.
        return StoreCall.within(storeTimeout, () -> queue.get().settle(due, result))
                .doOnNext(done -> {
                    if (!done) {
                        log.debug("Scope {} was settled otherwise while its lookup ran", due.scopeHash());
                        return;
                    }
                    metrics.reconciled(due.routeId(), outcome);
                    if (result instanceof LookupResult.Found found) {
                        SettlementAudit.settled(WHO, "complete", due.scopeHash(), "UNCERTAIN", found.reason());
                    } else if (result instanceof LookupResult.NotFound notFound) {
                        SettlementAudit.settled(WHO, "release", due.scopeHash(), "UNCERTAIN", notFound.reason());
                    }
                })
                .onErrorResume(e -> {
                    log.warn("Settling scope {} by its lookup failed: {}", due.scopeHash(), e.toString());
                    return Mono.empty();
                })
                .then();
    }

    /** Only the route's upstream (scheme and authority, nothing of the record's own), the template's path and query. */
    private static Optional<URI> url(DueLookup due, LookupTemplate template) {
        URI upstream;
        try {
            upstream = URI.create(due.upstream());
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        String scheme = upstream.getScheme();
        if (upstream.getRawAuthority() == null || !("http".equals(scheme) || "https".equals(scheme))) {
            log.debug("Not looking up scope {}: upstream {} is not a plain HTTP URI", due.scopeHash(), due.upstream());
            return Optional.empty();
        }
        return template.expand(due.values()).map(path -> URI.create(scheme + "://" + upstream.getRawAuthority() + path));
    }

    private static List<ResponseHeader> headers(ClientResponse answer) {
        List<ResponseHeader> headers = new ArrayList<>();
        answer.headers().asHttpHeaders().forEach((name, values) -> values.forEach(
                value -> headers.add(new ResponseHeader(name, value))));
        return headers;
    }

    private static String outcome(LookupResult result) {
        if (result instanceof LookupResult.Found) {
            return "found";
        }
        return result instanceof LookupResult.NotFound ? "not-found" : "failed";
    }

    /** Rounds of looking for due lookups this instance has finished. */
    public long rounds() {
        return rounds.get();
    }

    /** Lookups this instance has sent to an upstream. */
    public long lookups() {
        return lookups.get();
    }
}
