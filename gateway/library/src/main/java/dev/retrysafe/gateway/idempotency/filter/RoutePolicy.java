package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.decision.OutcomePolicy;
import dev.retrysafe.gateway.idempotency.fingerprint.RequestFingerprinter;
import dev.retrysafe.gateway.idempotency.key.KeyPolicy;
import dev.retrysafe.gateway.idempotency.key.KeySource;
import dev.retrysafe.gateway.idempotency.process.ProcessTracking;
import dev.retrysafe.gateway.idempotency.reconcile.Reconciliation;
import dev.retrysafe.gateway.idempotency.record.StorableHeaders;
import dev.retrysafe.gateway.idempotency.response.ErrorContract;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/** One route's settings, resolved from its filter args and the global defaults, validated once at startup. */
public record RoutePolicy(
        KeySource keySource,
        KeyPolicy keyPolicy,
        Set<String> methods,
        RequestFingerprinter fingerprinter,
        int replayStatus,
        StorableHeaders storableHeaders,
        Duration inFlightWait,
        Duration inFlightLease,
        Duration retention,
        OutcomePolicy outcomePolicy,
        int maxRequestBytes,
        Duration requestBodyTimeout,
        int maxStoredResponseBytes,
        Duration storeTimeout,
        Duration retryAfter,
        boolean upstreamHonoursKey,
        Optional<ProcessTracking> processTracking,
        boolean forwardWhenStoreUnavailable,
        Optional<Reconciliation> reconciliation,
        ErrorContract contract,
        Optional<String> operation) {
    /** An operation name is kept in every record and names its process links: bounded, one printable line. */
    public static final int MAX_OPERATION_LENGTH = 200;

    public RoutePolicy {
        methods = Set.copyOf(methods);
        operation.ifPresent(RoutePolicy::requireOperationName);
        Objects.requireNonNull(keySource, "keySource");
        Objects.requireNonNull(contract, "contract");
        if (replayStatus < 200 || replayStatus > 299) {
            throw new IllegalArgumentException("replay-status must be a 2xx status, was " + replayStatus);
        }
        requirePositive("in-flight-lease", inFlightLease);
        requirePositive("retention", retention);
        requirePositive("store-timeout", storeTimeout);
        requirePositive("request-body-timeout", requestBodyTimeout);
        if (inFlightWait.isNegative()) {
            throw new IllegalArgumentException("in-flight-wait must not be negative");
        }
        if (maxRequestBytes < 0) {
            throw new IllegalArgumentException("max-request-bytes must not be negative (byte limits), was "
                    + maxRequestBytes);
        }
        if (maxStoredResponseBytes < 0) {
            throw new IllegalArgumentException("max-stored-response-bytes must not be negative (byte limits), was "
                    + maxStoredResponseBytes);
        }
    }

    /** The name that scopes this route's records: its operation arg, else {@code routeId}. */
    public String operationOr(String routeId) {
        return operation.orElse(routeId);
    }

    /**
     * When an UNCERTAIN record of this route is first looked up at the upstream: the route's reconcile-after, or
     * twice the response timeout the request had (a backend still working on it must not be read as "not found"),
     * or twice the in-flight lease when the gateway waits for answers without a limit.
     */
    public Duration lookupAfter(Optional<Duration> responseTimeout) {
        return reconciliation.flatMap(Reconciliation::after)
                .orElseGet(() -> responseTimeout.orElse(inFlightLease).multipliedBy(2));
    }

    /** How long an unsettled record may exist: an uncertain one is kept as long as a result would be. */
    public Duration unsettledRecordTtl() {
        return retention.plus(inFlightLease);
    }

    /**
     * How long a client's answer waits for the store call that settles its exchange: three store-timeouts, the
     * first attempt and a retry after a short back-off. Past it the client gets its answer and the call goes on
     * in the background (see docs/concepts/unknown-outcomes.md).
     */
    public Duration settleDeadline() {
        return storeTimeout.multipliedBy(3);
    }

    /**
     * How long releasing a reservation or marking a record UNCERTAIN is tried again when Redis does not answer: as
     * long as the record itself may exist. Given up at the lease's end, the record would lapse to UNCERTAIN with a
     * guessed reason (a never-sent request "outcome unknown"), and its IN_FLIGHT state would outlive the exchange.
     * Only exchanges under way when Redis went away retry (at most once a second), so the cost is bounded by them.
     */
    public Duration settleRetrySpan() {
        return unsettledRecordTtl();
    }

    /**
     * How long the release of a reserve given up is tried again: the lease (after it a reservation that landed
     * lapses), but at least ten settle deadlines, since on a short lease a reserve whose answer was lost in a burst
     * of Redis faults can land after it (the 100,000-exchange store torture, with a 2 s lease, left two such
     * reservations IN_FLIGHT for requests never sent). Not the record's whole life, as for an exchange's settle:
     * every request refused while Redis stalls has one.
     */
    public Duration givenUpReleaseSpan() {
        Duration tenDeadlines = settleDeadline().multipliedBy(10);
        return inFlightLease.compareTo(tenDeadlines) >= 0 ? inFlightLease : tenDeadlines;
    }

    public boolean guards(String method) {
        return methods.contains(method);
    }

    private static void requireOperationName(String name) {
        if (name.isBlank() || name.length() > MAX_OPERATION_LENGTH
                || name.chars().anyMatch(c -> c < 0x21 || c == 0x7f || c == ':')) {
            throw new IllegalArgumentException("operation must be 1 to " + MAX_OPERATION_LENGTH + " printable "
                    + "characters without spaces or ':', was '" + name + "'");
        }
    }

    private static void requirePositive(String name, Duration value) {
        if (value == null || value.isZero() || value.isNegative()) {
            throw new IllegalArgumentException(name + " must be positive, was " + value);
        }
    }
}
