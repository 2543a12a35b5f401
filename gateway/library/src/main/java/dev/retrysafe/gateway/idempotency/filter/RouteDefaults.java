package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.response.ErrorContract;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.springframework.util.unit.DataSize;

/**
 * What an {@code Idempotency} route gets for every arg it does not set: plain values, built by the
 * auto-configuration from the {@code idempotency.*} properties, so that the filter never sees the property tree
 * (as Spring Cloud Gateway's cache filter receives its defaults). The last five have no route arg: they are
 * gateway-wide.
 *
 * @param contract                    {@code idempotency.contract}: how the gateway's own answers are numbered and
 *                                    written
 * @param forwardWhenStoreUnavailable {@code idempotency.store-unavailable=forward}: forward unguarded when Redis
 *                                    cannot be reached, instead of answering 503
 * @param rememberedFingerprints      {@code idempotency.remembered-fingerprints}: per route, how many JSON
 *                                    requests' fingerprints are kept by the hash of their raw bytes
 */
public record RouteDefaults(String keyHeader, int keyMinLength, int keyMaxLength, List<String> methods,
        List<String> unorderedArrays, int replayStatus, List<String> neverStoredHeaders, Duration inFlightWait,
        Duration inFlightLease, Duration retention, Set<Integer> releaseOnStatus, DataSize maxRequestBytes,
        DataSize maxStoredResponseBytes, boolean upstreamHonoursKey, ErrorContract contract,
        Duration requestBodyTimeout, Duration storeTimeout, Duration retryAfter, boolean forwardWhenStoreUnavailable,
        int rememberedFingerprints) {

    public RouteDefaults {
        methods = List.copyOf(methods);
        unorderedArrays = List.copyOf(unorderedArrays);
        neverStoredHeaders = List.copyOf(neverStoredHeaders);
        releaseOnStatus = Set.copyOf(releaseOnStatus);
        Objects.requireNonNull(contract, "contract");
    }
}
