package dev.retrysafe.gateway.idempotency.operator;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;

/**
 * What an operator sees of one record. Never the raw tenant or key (they are not stored); the body only when
 * asked for. Times are ISO-8601 instants. {@code method} and {@code path} (raw, without the query, cut at 512
 * characters) are those of the request that reserved the record; absent on records written before the gateway
 * kept them.
 * <p>
 * {@code operation} is what scopes the record (the record's {@code route} field, the route id by default) and
 * {@code route} the id of the route that reserved it: its {@code route_id} field, or, on records written before
 * routes named their operation, the operation itself (it was always the route id then). Two routes that name one
 * operation share its records, so the route says which of them holds this one.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record RecordView(
        String scopeHash,
        String route,
        String operation,
        String tenantHash,
        String state,
        String fingerprint,
        String method,
        String path,
        String upstream,
        Integer attempts,
        String reservedAt,
        String leaseUntil,
        String completedAt,
        Integer status,
        String uncertainAt,
        String uncertainReason,
        String processId,
        String processState,
        String processStatus,
        String resolvedBy,
        String resolvedReason,
        Long expiresInSeconds,
        StoredBody response) {

    /**
     * The stored response, shown only on request. {@code body} is UTF-8 text, or base64 when it is not text.
     * {@code unreadable} says why a sealed response cannot be opened (its encryption key was removed...).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record StoredBody(int status, List<List<String>> headers, String body, String bodyBase64,
            boolean bodyOmitted, String unreadable) {
    }
}
