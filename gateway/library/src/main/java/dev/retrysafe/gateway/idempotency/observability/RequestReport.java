package dev.retrysafe.gateway.idempotency.observability;

import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.spi.LoggingEventBuilder;
import org.springframework.http.HttpStatusCode;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.SignalType;

/**
 * What one guarded request came to, filled in along its walk and reported once when it ends: counted in
 * {@code idempotency.requests{route,outcome}} and written as one line by the logger {@code idempotency.request}:
 * <pre>
 * outcome=replay route=onboarding-merchants method=POST status=200 upstreamStatus=- durationMs=3
 *   tenant=Qk5ZmGxT0o3ZkL8vUeR1Aw scope=3b5YpEzY... traceId=4bf92f3577b34da6a3ce929d0e0e4736
 * </pre>
 * The line names the key only by the scope hash (the operator API finds the record by it, or computes it from
 * route, tenant and key) and the tenant by its hash: never the raw key, tenant, body or stored response.
 * A forwarded request ends when its upstream exchange and the store call after it end, even if the client has
 * gone; every other request ends when its answer is written.
 */
public final class RequestReport {
    public static final String LOGGER = "idempotency.request";
    private static final Logger log = LoggerFactory.getLogger(LOGGER);
    private static final String NONE = "-";

    private final IdempotencyMetrics metrics;
    private final ServerWebExchange exchange;
    private final String route;
    private final String traceId;
    private final long startNanos = System.nanoTime();
    private final AtomicBoolean ended = new AtomicBoolean();
    private volatile String tenantHash = NONE;
    private volatile String scopeHash = NONE;
    private volatile RequestOutcome outcome;
    private volatile int upstreamStatus;
    private volatile boolean endsWithUpstreamExchange;
    private volatile boolean detachedFromClient;

    RequestReport(IdempotencyMetrics metrics, ServerWebExchange exchange, String route, String traceId) {
        this.metrics = metrics;
        this.exchange = exchange;
        this.route = route;
        this.traceId = traceId == null ? NONE : traceId;
    }

    public void tenant(String tenant) {
        tenantHash = IdempotencyScope.tenantHash(tenant);
    }

    public void scope(IdempotencyScope scope) {
        scopeHash = scope.hash();
        tenantHash = scope.tenantHash();
    }

    /** The latest call wins: a request that waited and was then forwarded ends as what the forward came to. */
    public void outcome(RequestOutcome outcome) {
        this.outcome = outcome;
    }

    public void upstreamAnswered(int status) {
        upstreamStatus = status;
    }

    /**
     * The request now exchanges with the upstream: counted in {@code idempotency.requests.in.flight} until the
     * returned handle runs, and reported when {@link #upstreamExchangeEnded()} is called, not when the client goes.
     */
    public Runnable forwarding() {
        endsWithUpstreamExchange = true;
        return metrics.forwarding();
    }

    /** The request waits for its in-flight original, counted in {@code idempotency.requests.waiting}. */
    public Runnable waiting() {
        return metrics.waitingForOriginal();
    }

    /**
     * The whole request was received: what follows runs to its end whatever the client does, and the request is
     * reported when that work ends ({@link #detachedWorkEnded}), not when the client goes.
     */
    public void detachFromClient() {
        detachedFromClient = true;
    }

    /** The work that went on without the client ended. */
    public void detachedWorkEnded(SignalType signal) {
        if (endsWithUpstreamExchange) {
            return;
        }
        if (outcome == null) {
            outcome = RequestOutcome.ERROR;
        }
        end();
    }

    /** The answer to the client was written, failed or was cancelled (the client went away). */
    public void clientSideEnded(SignalType signal) {
        if (endsWithUpstreamExchange || (detachedFromClient && signal == SignalType.CANCEL)) {
            return;
        }
        if (outcome == null) {
            outcome = signal == SignalType.CANCEL ? RequestOutcome.CLIENT_GONE : RequestOutcome.ERROR;
        }
        end();
    }

    /** The upstream exchange of a forwarded request ended, its result stored, released or marked uncertain. */
    public void upstreamExchangeEnded() {
        if (outcome == null) {
            outcome = RequestOutcome.ERROR;
        }
        end();
    }

    private void end() {
        if (!ended.compareAndSet(false, true)) {
            return;
        }
        RequestOutcome ending = outcome;
        metrics.requestEnded(route, ending);
        if (!log.isInfoEnabled()) {
            return;
        }
        HttpStatusCode status = exchange.getResponse().getStatusCode();
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("outcome", ending.tag());
        fields.put("route", route);
        fields.put("method", exchange.getRequest().getMethod().name());
        fields.put("status", status == null ? NONE : Integer.toString(status.value()));
        fields.put("upstreamStatus", upstreamStatus == 0 ? NONE : Integer.toString(upstreamStatus));
        fields.put("durationMs", Long.toString(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos)));
        fields.put("tenant", tenantHash);
        fields.put("scope", scopeHash);
        fields.put("traceId", traceId);
        // The message is logfmt for plain-text logs; the same fields as key-value pairs for structured (JSON) ones.
        LoggingEventBuilder event = log.atInfo();
        StringBuilder line = new StringBuilder();
        fields.forEach((name, value) -> {
            event.addKeyValue(name, value);
            line.append(line.isEmpty() ? "" : " ").append(name).append('=').append(value(value));
        });
        event.log(line.toString());
    }

    /** logfmt: a value with spaces, quotes or '=' is quoted. Route ids come from configuration, not clients. */
    static String value(String raw) {
        if (raw.isEmpty()) {
            return "\"\"";
        }
        if (raw.chars().noneMatch(c -> c == ' ' || c == '"' || c == '=' || c < 0x20)) {
            return raw;
        }
        return '"' + raw.replace("\\", "\\\\").replace("\"", "\\\"").replaceAll("\\p{Cntrl}", "?") + '"';
    }
}
