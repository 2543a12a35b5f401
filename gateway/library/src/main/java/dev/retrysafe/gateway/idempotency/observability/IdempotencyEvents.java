package dev.retrysafe.gateway.idempotency.observability;

import dev.retrysafe.gateway.idempotency.process.ProcessEndEvents;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.CompletionResult;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.SettleResult;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The moments operations must be able to tell apart from a normal retry, logged (with the scope hash only: never
 * the key, tenant or body) and counted in {@code idempotency.events{event,route}}.
 */
public final class IdempotencyEvents implements ProcessEndEvents {
    private static final Logger log = LoggerFactory.getLogger(IdempotencyEvents.class);
    private final MeterRegistry meters;

    public IdempotencyEvents(MeterRegistry meters) {
        this.meters = meters;
    }

    public static IdempotencyEvents global() {
        return new IdempotencyEvents(Metrics.globalRegistry);
    }

    public double count(String event) {
        return meters.find("idempotency.events").tag("event", event).counters().stream()
                .mapToDouble(c -> c.count()).sum();
    }

    public void stored(IdempotencyScope scope, int status, CompletionResult result) {
        switch (result) {
            case STORED -> log.debug("Stored status {} for scope {}", status, scope.hash());
            case RESTORED -> {
                log.warn("Stored status {} for scope {} anew: its record had vanished (Redis restarted without "
                        + "persistence?)", status, scope.hash());
                increment("store-restored", scope);
            }
            case STORED_UNACKNOWLEDGED -> {
                log.warn("Stored status {} for scope {} on the Redis master, but not acknowledged by the replicas "
                        + "idempotency.replica-acks asks for: a failover now would lose the result (the record would "
                        + "turn UNCERTAIN, never run twice)", status, scope.hash());
                increment("replica-ack-missing", scope);
            }
            case ALREADY_STORED -> retryConfirmed(scope, "status " + status + " stored");
            case NOT_OWNER -> notOwner(scope, "Response (status " + status + ") not stored");
            case FENCED -> {
                log.warn("Response (status {}) for scope {} not stored: an operator released the record while this "
                        + "gateway still forwarded the request, so its result was not stored; the client's retry is "
                        + "forwarded as a fresh request", status, scope.hash());
                increment("store-fenced", scope);
            }
        }
    }

    public void released(IdempotencyScope scope, SettleResult result) {
        switch (result) {
            case DONE -> log.debug("Released scope {}", scope.hash());
            case ALREADY_DONE -> retryConfirmed(scope, "reservation released");
            case NOT_OWNER, RESTORED -> notOwner(scope, "Reservation not released");
        }
    }

    public void markedUncertain(IdempotencyScope scope, String reason, SettleResult result) {
        switch (result) {
            case DONE -> uncertain(scope, reason);
            case ALREADY_DONE -> {
                uncertain(scope, reason);
                retryConfirmed(scope, "marked UNCERTAIN");
            }
            case NOT_OWNER -> notOwner(scope, "Not marked UNCERTAIN");
            case RESTORED -> {
                log.warn("Scope {} written anew as UNCERTAIN ({}): its record had vanished while the request was out "
                        + "(Redis restarted without persistence?), and its retry must not be forwarded blindly",
                        scope.hash(), reason);
                increment("store-restored", scope);
            }
        }
    }

    /** Not an incident: Redis answered later than store-timeout, and the retry found the first attempt's write. */
    private void retryConfirmed(IdempotencyScope scope, String what) {
        log.info("Store call for scope {} retried after a late answer: Redis shows the first attempt took effect "
                + "({}); nothing lost, nothing written twice", scope.hash(), what);
        increment("store-retry-confirmed", scope);
    }

    private void notOwner(IdempotencyScope scope, String what) {
        log.warn("{} for scope {}: the record is no longer this request's (settled by an operator, or taken after its "
                + "lease lapsed)", what, scope.hash());
        increment("store-not-owner", scope);
    }

    public void storeLost(IdempotencyScope scope, int status, Throwable error) {
        // Not "not stored": the last attempt may have run and only its answer be missing (a failover under way).
        log.error("LOST: response (status {}) for scope {}: no attempt to store it was confirmed while the record "
                + "could exist ({}). If none ran, the record stays in flight until its lease lapses, then becomes "
                + "UNCERTAIN.", status, scope.hash(), error.toString());
        increment("store-lost", scope);
    }

    private void uncertain(IdempotencyScope scope, String reason) {
        log.warn("Outcome UNCERTAIN for scope {}: {}", scope.hash(), reason);
        increment("uncertain", scope);
    }

    public void replayUnreadable(IdempotencyScope scope, Throwable error) {
        log.error("Stored response for scope {} cannot be read; answered 409, the request is not sent again: {}. "
                + "Check the resource's state; the record is answered so until its retention ends.", scope.hash(),
                error.getMessage());
        increment("replay-unreadable", scope);
    }

    public void upstreamUnreachable(IdempotencyScope scope, Throwable error) {
        log.info("Upstream unreachable for scope {}: {}; reservation released", scope.hash(), error.toString());
        increment("upstream-unreachable", scope);
    }

    public void storeUnavailable(IdempotencyScope scope, Throwable error) {
        log.warn("Idempotency store unavailable, refusing scope {}: {}", scope.hash(), withRootCause(error));
        increment("store-unavailable", scope);
    }

    public void forwardedUnprotected(IdempotencyScope scope, Throwable error) {
        log.warn("Idempotency store unavailable, forwarding scope {} UNPROTECTED (idempotency.store-unavailable="
                + "forward): {}", scope.hash(), error.toString());
        increment("forwarded-unprotected", scope);
    }

    @Override
    public void processEndUnrecorded(String routeId, String processId, String terminalStatus, Throwable error) {
        log.warn("Process {} of route {} ended ({}), seen in a status read, but the end could not be recorded before "
                + "that read was answered: {}. Replays of its key may still carry Retry-After until a later status "
                + "read or the poller records it.", processId, routeId, terminalStatus, error.toString());
        increment("process-end-unrecorded", routeId);
    }

    /** "Unable to connect" alone hides what an operator must fix: a wrong password, an untrusted certificate... */
    private static String withRootCause(Throwable error) {
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == error ? error.toString() : error + " (cause: " + root + ")";
    }

    private void increment(String event, IdempotencyScope scope) {
        increment(event, scope.routeId());
    }

    private void increment(String event, String routeId) {
        meters.counter("idempotency.events", "event", event, "route", routeId).increment();
    }
}
