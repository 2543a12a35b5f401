package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.response.ErrorContract;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.springframework.util.unit.DataSize;

/**
 * What an {@code Idempotency} route gets for every arg it does not set: the {@code idempotency.*} properties as the
 * filter sees them (the properties record implements it), so that the filter never imports the property tree (as
 * Spring Cloud Gateway's cache filter receives plain defaults) and nothing copies them. Each method is the property
 * of the same name; {@link IdempotencyGatewayFilterFactory} resolves a route's args over them, in one place. The last
 * five have no route arg: they are gateway-wide.
 */
public interface RouteDefaults {
    String keyHeader();

    int keyMinLength();

    int keyMaxLength();

    List<String> methods();

    List<String> unorderedArrays();

    int replayStatus();

    List<String> neverStoredHeaders();

    Duration inFlightWait();

    Duration inFlightLease();

    Duration retention();

    Set<Integer> releaseOnStatus();

    DataSize maxRequestBytes();

    DataSize maxStoredResponseBytes();

    boolean upstreamHonoursKey();

    /** How the gateway's own answers are numbered and written. */
    ErrorContract contract();

    Duration requestBodyTimeout();

    Duration storeTimeout();

    Duration retryAfter();

    /** {@code idempotency.store-unavailable=forward}: forward unguarded when Redis cannot be reached, not 503. */
    boolean forwardWhenStoreUnavailable();

    /** Per route, how many JSON requests' fingerprints are kept by the hash of their raw bytes. */
    int rememberedFingerprints();
}
