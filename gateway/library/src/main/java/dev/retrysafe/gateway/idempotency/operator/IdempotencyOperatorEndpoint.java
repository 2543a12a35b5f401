package dev.retrysafe.gateway.idempotency.operator;

import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * {@code /actuator/idempotency}: look up a key's record, list UNCERTAIN and long IN_FLIGHT records, and settle one
 * by hand after reconciling with the backend. Every settlement is logged with who did it and why.
 */
@Endpoint(id = "idempotency")
public class IdempotencyOperatorEndpoint {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private final RecordInspector inspector;
    private final Duration retention;

    public IdempotencyOperatorEndpoint(RecordInspector inspector, Duration retention) {
        this.inspector = inspector;
        this.retention = retention;
    }

    /**
     * With {@code operation} and {@code key} (and {@code tenant} as the gateway resolved it: {@code header:<value>},
     * {@code principal:<name>}, or nothing for anonymous): that one record. Without {@code operation}, {@code route}
     * is taken as the operation, as it was before routes named one (a route's operation is its id by default).
     * Otherwise a list, by default of UNCERTAIN records and IN_FLIGHT ones older than a minute; {@code route} filters
     * it by the route that reserved a record, {@code operation} by the operation that scopes it.
     */
    @ReadOperation
    public WebEndpointResponse<Object> records(@Nullable String route, @Nullable String operation,
            @Nullable String tenant, @Nullable String key, @Nullable String state,
            @Nullable Long inFlightOlderThanSeconds, @Nullable Integer limit, @Nullable Boolean includeBody) {
        if (key != null) {
            String scopedBy = operation != null ? operation : route;
            if (scopedBy == null) {
                return new WebEndpointResponse<>(Map.of("error", "operation (or route) is required with key"), 400);
            }
            IdempotencyKey parsed;
            try {
                parsed = new IdempotencyKey(key);
            } catch (IllegalArgumentException invalid) {
                return new WebEndpointResponse<>(Map.of("error", "not a valid idempotency key"), 400);
            }
            String hash = new IdempotencyScope(tenant == null ? "" : tenant, scopedBy, parsed).hash();
            return one(hash, Boolean.TRUE.equals(includeBody));
        }
        Set<String> states = state == null ? Set.of("UNCERTAIN", "IN_FLIGHT")
                : Arrays.stream(state.split(",")).map(s -> s.trim().toUpperCase(Locale.ROOT)).collect(Collectors.toSet());
        RecordFilter filter = new RecordFilter(states, Optional.ofNullable(route), Optional.ofNullable(operation),
                Optional.ofNullable(tenant).map(IdempotencyScope::tenantHash),
                Duration.ofSeconds(inFlightOlderThanSeconds == null ? 60 : inFlightOlderThanSeconds),
                limit == null ? 100 : Math.max(1, Math.min(limit, 1000)));
        List<RecordView> found = inspector.list(filter).collectList().block(TIMEOUT);
        return new WebEndpointResponse<>(Map.of("records", found == null ? List.of() : found), 200);
    }

    /** One record by its scope hash, as it appears in the gateway's logs. */
    @ReadOperation
    public WebEndpointResponse<Object> record(@Selector String scopeHash, @Nullable Boolean includeBody) {
        return one(scopeHash, Boolean.TRUE.equals(includeBody));
    }

    /**
     * Settles an IN_FLIGHT or UNCERTAIN record: {@code action=release} frees it so the next retry is forwarded;
     * {@code action=complete} stores {@code status} (and {@code body}, {@code contentType}) as its result, replayed
     * from now on. {@code reason} is required: it is logged with the operator's name. Input that would harm later
     * replays or the log (see {@link Settlement}) is a 400 naming the {@code field}; nothing is stored.
     */
    @WriteOperation
    public WebEndpointResponse<Object> resolve(@Selector String scopeHash, String action, String reason,
            @Nullable Integer status, @Nullable String body, @Nullable String contentType, SecurityContext security) {
        String who = security.getPrincipal() == null ? "anonymous" : security.getPrincipal().getName();
        Settlement settlement = new Settlement(action, reason, status, body, contentType);
        Optional<Settlement.Invalid> invalid = settlement.invalid();
        if (invalid.isPresent()) {
            return new WebEndpointResponse<>(Map.of("error", invalid.get().message(), "field", invalid.get().field()),
                    400);
        }
        String previous = settlement.completes()
                ? inspector.complete(scopeHash, settlement.response(), retention, who, reason).block(TIMEOUT)
                : inspector.release(scopeHash).block(TIMEOUT);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("scopeHash", scopeHash);
        result.put("action", action);
        result.put("previousState", previous);
        if ("ABSENT".equals(previous)) {
            return new WebEndpointResponse<>(result, 404);
        }
        if (!"IN_FLIGHT".equals(previous) && !"UNCERTAIN".equals(previous)) {
            result.put("error", "only IN_FLIGHT or UNCERTAIN records can be resolved");
            return new WebEndpointResponse<>(result, 409);
        }
        // The reason is one printable line already; the name and the path segment are escaped all the same.
        SettlementAudit.settled(who, action, scopeHash, previous, reason);
        return new WebEndpointResponse<>(result, 200);
    }

    private WebEndpointResponse<Object> one(String scopeHash, boolean includeBody) {
        RecordView view = inspector.find(scopeHash, includeBody).block(TIMEOUT);
        return view == null
                ? new WebEndpointResponse<>(Map.of("error", "no record", "scopeHash", scopeHash), 404)
                : new WebEndpointResponse<>(view, 200);
    }
}
