package dev.retrysafe.gateway.idempotency.operator;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * Which records to list: by state, route, operation and tenant hash; IN_FLIGHT ones only once older than
 * {@code inFlightOlderThan} (a normal request is in flight for milliseconds; a long one deserves a look).
 *
 * @param route     the id of the route that reserved the record ({@link RecordView#route()})
 * @param operation the operation that scopes it ({@link RecordView#operation()}): one route's records, or several
 *                  routes' that share it
 */
public record RecordFilter(Set<String> states, Optional<String> route, Optional<String> operation,
        Optional<String> tenantHash,
        Duration inFlightOlderThan, int limit) {
}
