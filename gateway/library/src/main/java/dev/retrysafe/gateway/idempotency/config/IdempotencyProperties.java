package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.response.ErrorContract;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Gateway-wide defaults under {@code idempotency.*}. Each route's {@code Idempotency} filter args override the
 * route-level ones; docs/reference/configuration.md lists every property with its default.
 *
 * @param contract How the gateway numbers and writes the answers it produces itself: onboarding (the Onboarding
 *                 API's envelope, application/json; a key missing or invalid 422, another payload 409) or ietf
 *                 (draft-ietf-httpapi-idempotency-key-header: a key missing or invalid 400, another payload 422, a
 *                 request still in flight 409; RFC 9457 application/problem+json bodies). Route arg contract.
 */
@ConfigurationProperties("idempotency")
public record IdempotencyProperties(
        @DefaultValue("Idempotency-Key") String keyHeader,
        @DefaultValue("16") int keyMinLength,
        @DefaultValue("64") int keyMaxLength,
        @DefaultValue({"POST", "PUT", "PATCH", "DELETE"}) List<String> methods,
        String tenantHeader,
        List<String> unorderedArrays,
        @DefaultValue("200") int replayStatus,
        @DefaultValue({"Set-Cookie", "Set-Cookie2"}) List<String> neverStoredHeaders,
        @DefaultValue("2s") Duration inFlightWait,
        @DefaultValue("60s") Duration inFlightLease,
        @DefaultValue("24h") Duration retention,
        @DefaultValue({"401", "403", "408", "425", "429", "503"}) Set<Integer> releaseOnStatus,
        @DefaultValue("1MB") DataSize maxRequestBytes,
        @DefaultValue("30s") Duration requestBodyTimeout,
        @DefaultValue("1MB") DataSize maxStoredResponseBytes,
        @DefaultValue("1KB") DataSize compressStoredBodiesAbove,
        @DefaultValue("1s") Duration storeTimeout,
        @DefaultValue("1s") Duration retryAfter,
        @DefaultValue("false") boolean upstreamHonoursKey,
        @DefaultValue("onboarding") ErrorContract contract,
        @DefaultValue("reject") StoreUnavailable storeUnavailable,
        @DefaultValue("0") int replicaAcks,
        @DefaultValue("100ms") Duration replicaAckTimeout,
        @DefaultValue("8") int replicaAckConnections,
        @DefaultValue ProcessPoll processPoll,
        @DefaultValue Reconcile reconcile,
        @DefaultValue RecordCountSampling recordCounts,
        @DefaultValue StoreMemory store,
        @DefaultValue("true") boolean failOnUnknownSettings,
        @DefaultValue("4096") int rememberedFingerprints) {

    public IdempotencyProperties {
        unorderedArrays = unorderedArrays == null ? List.of() : List.copyOf(unorderedArrays);
        if (rememberedFingerprints < 0 || rememberedFingerprints == 1) {
            throw new IllegalArgumentException("idempotency.remembered-fingerprints must be 0 (off) or at least 2, was "
                    + rememberedFingerprints);
        }
        if (replicaAcks < 0 || replicaAckConnections < 1) {
            throw new IllegalArgumentException("idempotency.replica-acks must be 0 or more and "
                    + "idempotency.replica-ack-connections 1 or more");
        }
        if (replicaAcks > 0 && replicaAckTimeout.compareTo(storeTimeout) >= 0) {
            throw new IllegalArgumentException("idempotency.replica-ack-timeout (" + replicaAckTimeout + ") must be "
                    + "shorter than idempotency.store-timeout (" + storeTimeout + "), or every unacknowledged "
                    + "write would look like an unreachable Redis");
        }
    }

    /** What a guarded route does while Redis cannot be reached. */
    public enum StoreUnavailable {
        /** Fail closed: 503 with Retry-After, the upstream is not called. */
        REJECT,
        /** Pass requests to the upstream unprotected, each one logged and counted. */
        FORWARD
    }

    /**
     * How the gateway polls the status of a process that nobody asks about.
     *
     * @param restoreInterval how often the fleet (one instance a time) puts back in the queue's directory the slots a
     *                        Redis failover made it lose
     */
    public record ProcessPoll(@DefaultValue("1s") Duration initialDelay, @DefaultValue("60s") Duration maxDelay,
            @DefaultValue("60s") Duration restoreInterval) {
    }

    /**
     * How the gateway looks up UNCERTAIN records of routes with a {@code reconcile-uri} at their upstream.
     *
     * @param interval      how often each instance looks for due lookups
     * @param retryDelay    after a lookup that told nothing (an error, another status, no answer in time), the
     *                      record is looked up again this much later; the delay doubles after each such lookup
     * @param maxRetryDelay up to this
     */
    public record Reconcile(@DefaultValue("1s") Duration interval, @DefaultValue("5s") Duration retryDelay,
            @DefaultValue("5m") Duration maxRetryDelay) {
        public Reconcile {
            if (interval.isNegative() || interval.isZero() || retryDelay.isNegative() || retryDelay.isZero()
                    || maxRetryDelay.compareTo(retryDelay) < 0) {
                throw new IllegalArgumentException("idempotency.reconcile.interval and retry-delay must be positive "
                        + "and max-retry-delay at least retry-delay");
            }
        }
    }

    /**
     * Whether the Redis behind the store can forget records, checked at startup and every {@code checkInterval}: its
     * {@code maxmemory-policy}, its persistence, and a marker key per master that a loss of its memory removes.
     *
     * @param allowEviction start (with a WARN) on a Redis whose {@code maxmemory-policy} evicts keys, instead of
     *                      refusing to: the operator accepts that evicted records let duplicates through
     * @param checkInterval how often the policy and the memory markers are checked while running
     */
    public record StoreMemory(@DefaultValue("false") boolean allowEviction,
            @DefaultValue("10s") Duration checkInterval) {
        public StoreMemory {
            if (checkInterval.isNegative() || checkInterval.isZero()) {
                throw new IllegalArgumentException("idempotency.store.check-interval must be positive, was "
                        + checkInterval);
            }
        }
    }

    /**
     * The periodic count of records by state behind the {@code idempotency.records} gauges, on each instance where it
     * is enabled. Unsettled records are counted from their index; COMPLETED ones by reading every record key.
     *
     * @param pendingAfter an IN_FLIGHT record reserved longer ago than this counts as pending
     * @param maxRecords   the COMPLETED count gives up (its gauge NaN) rather than read more record keys than this
     */
    public record RecordCountSampling(@DefaultValue("true") boolean enabled, @DefaultValue("60s") Duration interval,
            @DefaultValue("60s") Duration pendingAfter, @DefaultValue("100000") long maxRecords) {
    }
}
