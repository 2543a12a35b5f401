package dev.retrysafe.gateway.idempotency.response;

import dev.retrysafe.gateway.idempotency.response.GatewayError.Kind;
import java.nio.charset.StandardCharsets;

/**
 * The error body of the {@link ErrorContract#IETF} contract: RFC 9457 problem details,
 * {@code {"type":"https://retrysafe.dev/problems/request-in-flight","title":"...","status":409,"detail":"..."}}.
 * One type per {@link Kind}, its URI and title fixed (docs/reference/responses.md lists them: clients match on the
 * type); the detail is the kind's message.
 */
public final class ProblemDetails {
    public static final String MEDIA_TYPE = "application/problem+json";
    public static final String TYPE_BASE = "https://retrysafe.dev/problems/";

    private ProblemDetails() {
    }

    public static byte[] json(Kind kind, int status, String detail) {
        String body = "{\"type\":" + ErrorEnvelope.quote(type(kind)) + ",\"title\":" + ErrorEnvelope.quote(title(kind))
                + ",\"status\":" + status + ",\"detail\":" + ErrorEnvelope.quote(detail) + "}";
        return body.getBytes(StandardCharsets.UTF_8);
    }

    /** The problem type's URI; never changes once published. */
    public static String type(Kind kind) {
        return TYPE_BASE + switch (kind) {
            case KEY_MISSING -> "idempotency-key-missing";
            case KEY_INVALID -> "idempotency-key-invalid";
            case TENANT_INVALID -> "tenant-ambiguous";
            case PAYLOAD_MISMATCH -> "idempotency-key-reused";
            case IN_FLIGHT -> "request-in-flight";
            case OUTCOME_UNCERTAIN -> "outcome-uncertain";
            case REPLAY_TOO_LARGE -> "replay-too-large";
            case REPLAY_UNREADABLE -> "replay-unreadable";
            case BODY_TOO_LARGE -> "request-body-too-large";
            case BODY_TIMEOUT -> "request-body-timeout";
            case BODY_MALFORMED -> "request-body-malformed";
            case BODY_INCOMPLETE -> "request-body-incomplete";
            case STORE_UNAVAILABLE -> "idempotency-unavailable";
            case UPSTREAM_UNREACHABLE -> "upstream-unreachable";
            case UPSTREAM_TIMEOUT -> "upstream-timeout";
            case UPSTREAM_BROKEN -> "upstream-connection-broken";
        };
    }

    /** A short summary of the type, the same on every occurrence (RFC 9457 section 3.1.3). */
    public static String title(Kind kind) {
        return switch (kind) {
            case KEY_MISSING -> "Idempotency key is missing";
            case KEY_INVALID -> "Idempotency key is invalid";
            case TENANT_INVALID -> "Tenant is ambiguous";
            case PAYLOAD_MISMATCH -> "Idempotency key is already used";
            case IN_FLIGHT -> "A request is outstanding for this idempotency key";
            case OUTCOME_UNCERTAIN -> "The outcome of the request with this idempotency key is unknown";
            case REPLAY_TOO_LARGE -> "Response too large to replay";
            case REPLAY_UNREADABLE -> "Stored response cannot be replayed";
            case BODY_TOO_LARGE -> "Request body too large";
            case BODY_TIMEOUT -> "Request body timed out";
            case BODY_MALFORMED -> "Request body malformed";
            case BODY_INCOMPLETE -> "Request body incomplete";
            case STORE_UNAVAILABLE -> "Idempotency protection unavailable";
            case UPSTREAM_UNREACHABLE -> "Upstream unreachable";
            case UPSTREAM_TIMEOUT -> "Upstream timed out, outcome unknown";
            case UPSTREAM_BROKEN -> "Upstream connection broke, outcome unknown";
        };
    }
}
