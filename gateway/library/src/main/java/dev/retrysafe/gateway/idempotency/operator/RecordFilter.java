package dev.retrysafe.gateway.idempotency.operator;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * Which records to list: by state, route and tenant hash; IN_FLIGHT ones only once older than {@code inFlightOlderThan}
 * (a normal request is in flight for milliseconds; a long one deserves a look).
 */
public record RecordFilter(Set<String> states, Optional<String> route, Optional<String> tenantHash,
        Duration inFlightOlderThan, int limit) {
}
