package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.filter.RouteDefaults;
import dev.retrysafe.gateway.idempotency.response.ErrorContract;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Gateway-wide defaults under {@code idempotency.*}. Each route's {@code Idempotency} filter args override the
 * route-level ones: the filter reads them as its {@link RouteDefaults}, which this record is, not a copy of;
 * docs/reference/configuration.md lists every property with its default. The {@code @param} texts
 * are the descriptions IDEs show (the configuration metadata), so they are plain text.
 *
 * @param keyHeader                 Request header carrying the idempotency key. The route arg key-header overrides it.
 * @param keyMinLength              Shortest valid key, in characters. The route arg key-min-length overrides it.
 * @param keyMaxLength              Longest valid key, in characters. The route arg key-max-length overrides it.
 * @param methods                   HTTP methods that need a key; requests with other methods pass untouched. The route
 *                                  arg methods overrides it.
 * @param tenantHeader              Header naming the tenant when no principal is authenticated; trust it on trusted
 *                                  networks only. Unset: only an authenticated principal names the tenant.
 * @param unorderedArrays           JSON field names whose arrays compare regardless of order, at any depth. Unset: the
 *                                  order of every array counts. The route arg unordered-arrays overrides it.
 * @param replayStatus              Status a stored 2xx result is replayed with; must be a 2xx. The route arg
 *                                  replay-status overrides it.
 * @param neverStoredHeaders        Response headers never stored nor replayed. Hop-by-hop headers, the headers the
 *                                  upstream names in its Connection header, and Content-Length are never stored either,
 *                                  whatever this list says. The route arg never-stored-headers overrides it.
 * @param inFlightWait              How long a duplicate waits for the in-flight original; 0 answers 409 at once. The
 *                                  route arg in-flight-wait overrides it.
 * @param inFlightLease             Lease of an in-flight reservation, renewed every third of it while the upstream
 *                                  exchange lasts; if its gateway instance dies, the record turns UNCERTAIN this long
 *                                  after the last renewal. The route arg in-flight-lease overrides it.
 * @param retention                 How long a result is replayed, counted from its completion; then the key is free
 *                                  again. The route arg retention overrides it.
 * @param releaseOnStatus           Upstream statuses that are not results: passed through, not stored, and the
 *                                  reservation released. The route arg release-on-status overrides it.
 * @param maxRequestBytes           Largest request body accepted on a guarded route; a larger one is answered 413. The
 *                                  route arg max-request-bytes overrides it.
 * @param requestBodyTimeout        Longest time to receive a guarded request's whole body; past it 408, the upstream is
 *                                  not called and nothing is reserved.
 * @param maxStoredResponseBytes    Largest response body stored for replay. The route arg max-stored-response-bytes
 *                                  overrides it.
 * @param compressStoredBodiesAbove Stored bodies of this size or more are deflated in Redis when that makes them
 *                                  smaller; replays stay byte-identical.
 * @param storeTimeout              Longest wait for one Redis call before answering 503, counted from when the call is
 *                                  made; also the longest a status read is held while its process end is recorded.
 *                                  Three of them are the settle deadline: the longest a client's answer waits for the
 *                                  call that stores or releases its record.
 * @param retryAfter                Retry-After sent with the 409s for in-flight and uncertain records, the 502 for an
 *                                  unreachable upstream, and 503.
 * @param upstreamHonoursKey        Whether the backend dedupes on the forwarded Idempotency-Key itself: only then is a
 *                                  request whose outcome is UNCERTAIN sent again, with the same key. The route arg
 *                                  upstream-honours-key overrides it.
 * @param storeUnavailable          What a guarded route does while Redis is unreachable: reject (503, fail closed) or
 *                                  forward (unprotected, each request logged and counted).
 * @param replicaAcks               Replicas that must acknowledge (Redis WAIT) a reservation before it is forwarded,
 *                                  and a stored result; 0 waits for none. Standalone and Sentinel only: refused at
 *                                  startup with Redis Cluster.
 * @param replicaAckTimeout         Longest WAIT for those acknowledgements; must be shorter than store-timeout.
 * @param replicaAckConnections     Redis connections of the gateway's own for script plus WAIT (a WAIT holds its
 *                                  connection), used round-robin.
 * @param processPoll               Polling the status of unfinished processes.
 * @param reconcile                 Lookups of UNCERTAIN records at their upstream.
 * @param recordCounts              The record counts behind the idempotency.records gauges.
 * @param store                     The Redis behind the store: whether it can forget records, how it is written to.
 * @param failOnUnknownSettings     Whether an idempotency property that is not one, or an arg the Idempotency filter
 *                                  does not have, stops the startup naming it and the nearest valid name; false ignores
 *                                  them, as Spring does by default.
 * @param rememberedFingerprints    Per route, how many JSON requests' fingerprints are kept in memory by the SHA-256 of
 *                                  their raw bytes (about 250 bytes each, never a body), so that a retry resending the
 *                                  same bytes to the same instance skips parsing; 0 keeps none.
 * @param contract                  How the gateway numbers and writes the answers it produces itself: onboarding (the
 *                                  Onboarding API's envelope, application/json; a key missing or invalid 422, another
 *                                  payload 409) or ietf (draft-ietf-httpapi-idempotency-key-header: a key missing or
 *                                  invalid 400, another payload 422, a request still in flight 409; RFC 9457
 *                                  application/problem+json bodies). The route arg contract overrides it.
 * @param redisCommandObservations  Which Redis commands get an observation (a timer and, when traced, a span) of their
 *                                  own when the application observes Lettuce: sampled (only those of a sampled trace;
 *                                  a guarded request is then one observation, not one more per Redis call) or all
 *                                  (Spring Boot's default: every command, each untraced one a trace of its own).
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
        @DefaultValue Store store,
        @DefaultValue("true") boolean failOnUnknownSettings,
        @DefaultValue("4096") int rememberedFingerprints,
        @DefaultValue("sampled") RedisCommandObservations redisCommandObservations) implements RouteDefaults {

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

    @Override
    public boolean forwardWhenStoreUnavailable() {
        return storeUnavailable == StoreUnavailable.FORWARD;
    }

    /** Which Redis commands Lettuce observes, when the application has an observation registry. */
    public enum RedisCommandObservations {
        /** Only the commands of a sampled trace, as spans of the request's trace. */
        SAMPLED,
        /** Every command (Spring Boot's default): a timer each, and a trace of its own when not in a request's. */
        ALL
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
     * @param initialDelay    Delay of the first poll of an unfinished process's status, after its 202; then the
     *                        delay doubles, up to max-delay.
     * @param maxDelay        Longest delay between two polls of one process.
     * @param restoreInterval How often the fleet (one instance per interval) puts back in the poll queue's directory
     *                        the slots a Redis failover made it lose: a process so orphaned is polled at most this
     *                        much later.
     */
    public record ProcessPoll(@DefaultValue("1s") Duration initialDelay, @DefaultValue("60s") Duration maxDelay,
            @DefaultValue("60s") Duration restoreInterval) {
    }

    /**
     * How the gateway looks up UNCERTAIN records of routes with a {@code reconcile-uri} at their upstream.
     *
     * @param interval      How often each instance looks for due lookups of UNCERTAIN records.
     * @param retryDelay    After a lookup that told nothing (an error, another status, no answer in 5 s), the record
     *                      is looked up again this much later; the delay doubles after each such lookup.
     * @param maxRetryDelay Longest delay between two lookups of one record; at least retry-delay.
     * @param restoreInterval How often the fleet (one instance per interval) checks the lookup queue's directory
     *                      against its slots, putting back what a Redis failover lost of it.
     */
    public record Reconcile(@DefaultValue("1s") Duration interval, @DefaultValue("5s") Duration retryDelay,
            @DefaultValue("5m") Duration maxRetryDelay, @DefaultValue("60s") Duration restoreInterval) {
        public Reconcile {
            if (interval.isNegative() || interval.isZero() || retryDelay.isNegative() || retryDelay.isZero()
                    || maxRetryDelay.compareTo(retryDelay) < 0 || restoreInterval.isNegative()
                    || restoreInterval.isZero()) {
                throw new IllegalArgumentException("idempotency.reconcile.interval, retry-delay and restore-interval "
                        + "must be positive and max-retry-delay at least retry-delay");
            }
        }
    }

    /**
     * The Redis behind the store: whether it can forget records, checked at startup and every {@code checkInterval}
     * (its {@code maxmemory-policy}, its persistence, and a marker key per master that a loss of its memory removes),
     * and how the store writes to it.
     *
     * @param allowEviction  Whether to start, with a WARN, on a Redis whose maxmemory-policy evicts keys (allkeys-*,
     *                       volatile-*) instead of refusing to: the operator accepts that evicted records let
     *                       duplicates through.
     * @param checkInterval  How often every Redis master's maxmemory-policy and memory marker are checked while
     *                       running; must be positive.
     * @param coalesceWrites Whether the store's connection sends the commands that concurrent requests queue together
     *                       in one write (one flush for all those queued by then) instead of one write each: less CPU
     *                       in the gateway and in Redis under load. One Redis (standalone, Sentinel) only; a Cluster's
     *                       writes are never coalesced.
     * @param nearCache      Replays answered from each instance's memory, kept true by Redis's invalidations.
     */
    public record Store(@DefaultValue("false") boolean allowEviction,
            @DefaultValue("10s") Duration checkInterval, @DefaultValue("true") boolean coalesceWrites,
            @DefaultValue NearCache nearCache) {
        public Store {
            if (checkInterval.isNegative() || checkInterval.isZero()) {
                throw new IllegalArgumentException("idempotency.store.check-interval must be positive, was "
                        + checkInterval);
            }
        }
    }

    /**
     * Settled records kept in each instance's memory to answer their replays without a script in Redis. Redis reports
     * every change of a record kept ({@code CLIENT TRACKING}, RESP3), and a copy is served only while the instance
     * has heard from Redis on that connection within {@code maxStaleness}: an operator's release, a process end, an
     * expiry or a loss of Redis's memory is seen by every instance within that bound. Off by itself, with a WARN, on a
     * Redis Cluster or a Redis that does not report changes (RESP2, {@code CLIENT} refused).
     *
     * @param enabled      Whether replays of settled records are answered from this instance's memory.
     * @param maxEntries   At most this many records are kept.
     * @param maxBytes     At most about this much memory is spent on them (bodies, headers and keys counted).
     * @param maxStaleness A replay served from memory is at most this far behind Redis; a change is seen by every
     *                     instance within it. Must be positive.
     */
    public record NearCache(@DefaultValue("false") boolean enabled, @DefaultValue("10000") long maxEntries,
            @DefaultValue("64MB") DataSize maxBytes, @DefaultValue("1s") Duration maxStaleness) {
        public NearCache {
            if (maxEntries < 1) {
                throw new IllegalArgumentException("idempotency.store.near-cache.max-entries must be at least 1, was "
                        + maxEntries);
            }
            if (maxBytes.toBytes() < 1) {
                throw new IllegalArgumentException("idempotency.store.near-cache.max-bytes must be positive, was "
                        + maxBytes);
            }
            if (maxStaleness.isNegative() || maxStaleness.isZero()) {
                throw new IllegalArgumentException("idempotency.store.near-cache.max-staleness must be positive, was "
                        + maxStaleness);
            }
        }
    }

    /**
     * The periodic count of records by state behind the {@code idempotency.records} gauges, on each instance where it
     * is enabled. Unsettled records are counted from their index; COMPLETED ones by reading every record key.
     *
     * @param enabled      Whether this instance samples the record counts for the idempotency.records gauges.
     * @param interval     Time between two samples; a sample slower than this is abandoned.
     * @param pendingAfter An IN_FLIGHT record reserved longer ago than this counts in idempotency.records.pending.
     * @param maxRecords   The COMPLETED count gives up (its gauge reads NaN) rather than read more record keys than
     *                     this; the unsettled counts come from their index and are always known.
     */
    public record RecordCountSampling(@DefaultValue("true") boolean enabled, @DefaultValue("60s") Duration interval,
            @DefaultValue("60s") Duration pendingAfter, @DefaultValue("100000") long maxRecords) {
    }
}
