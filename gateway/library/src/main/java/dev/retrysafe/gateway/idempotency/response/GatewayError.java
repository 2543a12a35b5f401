package dev.retrysafe.gateway.idempotency.response;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * Every answer the gateway produces itself: what went wrong, the message integrators read and when to retry. Messages
 * never contain the key, the tenant or the body. The status and the body's form are the route's
 * {@link ErrorContract}'s.
 */
public record GatewayError(Kind kind, String message, Optional<Duration> retryAfter) {

    public GatewayError {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(message, "message");
        Objects.requireNonNull(retryAfter, "retryAfter");
    }

    /** What went wrong, one per answer: each contract maps every kind to its status explicitly. */
    public enum Kind {
        /** No idempotency key: the header was not sent, or the body has no value where the key is taken from. */
        KEY_MISSING,
        /** A key that breaks a rule: empty, sent twice, too short or long, a character not allowed, not a JSON id. */
        KEY_INVALID,
        /** The tenant header names more than one tenant. */
        TENANT_INVALID,
        /** The key was used with another payload. */
        PAYLOAD_MISMATCH,
        /** The first request with this key and payload is still being processed. */
        IN_FLIGHT,
        /** The first request's outcome is unknown, so it is not sent again. */
        OUTCOME_UNCERTAIN,
        /** The first request was processed; its response was too large to store. */
        REPLAY_TOO_LARGE,
        /** The first request was processed; its stored response cannot be read or written back. */
        REPLAY_UNREADABLE,
        BODY_TOO_LARGE,
        BODY_TIMEOUT,
        BODY_MALFORMED,
        BODY_INCOMPLETE,
        STORE_UNAVAILABLE,
        /** Nothing was sent: the upstream could not be reached. */
        UPSTREAM_UNREACHABLE,
        /** Sent, no answer in time: outcome unknown. */
        UPSTREAM_TIMEOUT,
        /** Sent, the connection broke before an answer: outcome unknown. */
        UPSTREAM_BROKEN
    }

    public static final String PAYLOAD_MISMATCH_MESSAGE =
            "The idempotency key was already used with a different payload.";

    /** Also the text of the request framing guard's own 400, which answers before any route runs. */
    public static final String MALFORMED_BODY_MESSAGE = "The request body is malformed (its chunked framing could "
            + "not be decoded); the request was not processed.";

    public static GatewayError keyMissing(String message) {
        return new GatewayError(Kind.KEY_MISSING, message, Optional.empty());
    }

    public static GatewayError invalidKey(String message) {
        return new GatewayError(Kind.KEY_INVALID, message, Optional.empty());
    }

    public static GatewayError invalidTenant(String header) {
        return new GatewayError(Kind.TENANT_INVALID, "The " + header + " header must name one tenant: it was sent "
                + "with different values, or with a comma-separated list.", Optional.empty());
    }

    public static GatewayError payloadMismatch() {
        return new GatewayError(Kind.PAYLOAD_MISMATCH, PAYLOAD_MISMATCH_MESSAGE, Optional.empty());
    }

    public static GatewayError stillInFlight(Duration retryAfter) {
        return new GatewayError(Kind.IN_FLIGHT, "A request with this idempotency key is still being processed. "
                + "Retry later with the same key and payload.", Optional.of(retryAfter));
    }

    public static GatewayError replayUnavailable(int originalStatus, long limitBytes) {
        return new GatewayError(Kind.REPLAY_TOO_LARGE, "The request with this idempotency key was already processed "
                + "(status " + originalStatus + ") but its response was larger than " + limitBytes
                + " bytes and cannot be replayed. Do not resend it with a new key: check the resource's state.",
                Optional.empty());
    }

    public static GatewayError replayUnreadable(int originalStatus) {
        return new GatewayError(Kind.REPLAY_UNREADABLE, "The request with this idempotency key was already processed "
                + "(status " + originalStatus + ") but its stored response can no longer be read and cannot be "
                + "replayed. Do not resend it with a new key: check the resource's state.", Optional.empty());
    }

    public static GatewayError bodyTooLarge(long limitBytes) {
        return new GatewayError(Kind.BODY_TOO_LARGE, "The request body is larger than the limit of " + limitBytes
                + " bytes.", Optional.empty());
    }

    public static GatewayError bodyTimeout(Duration limit) {
        return new GatewayError(Kind.BODY_TIMEOUT, "The request body did not arrive completely within "
                + limit.toSeconds() + " seconds; the request was not processed. Send it again with the same key.",
                Optional.empty());
    }

    public static GatewayError malformedBody() {
        return new GatewayError(Kind.BODY_MALFORMED, MALFORMED_BODY_MESSAGE
                + " Send it again, well framed, with the same key.", Optional.empty());
    }

    /** Never seen by the client that caused it (its connection is gone); named for the log and the metrics. */
    public static GatewayError bodyIncomplete() {
        return new GatewayError(Kind.BODY_INCOMPLETE, "The request body did not arrive completely; the request was "
                + "not processed. Send it again with the same key.", Optional.empty());
    }

    public static GatewayError storeUnavailable(Duration retryAfter) {
        return new GatewayError(Kind.STORE_UNAVAILABLE, "Idempotency protection is temporarily unavailable; the "
                + "request was not processed. Retry later with the same key.", Optional.of(retryAfter));
    }

    public static GatewayError upstreamUnreachable(Duration retryAfter) {
        return new GatewayError(Kind.UPSTREAM_UNREACHABLE, "The upstream service could not be reached; the request "
                + "was not processed. Retry with the same key.", Optional.of(retryAfter));
    }

    public static GatewayError outcomeUnknownTimeout() {
        return new GatewayError(Kind.UPSTREAM_TIMEOUT, "The upstream service did not answer in time; the outcome of "
                + "the request is unknown. Retry with the same key and payload; do not use a new key.",
                Optional.empty());
    }

    public static GatewayError outcomeUnknownBroken() {
        return new GatewayError(Kind.UPSTREAM_BROKEN, "The connection to the upstream service broke after the "
                + "request was sent; the outcome of the request is unknown. Retry with the same key and payload; do "
                + "not use a new key.", Optional.empty());
    }

    public static GatewayError uncertainRetry(Duration retryAfter) {
        return new GatewayError(Kind.OUTCOME_UNCERTAIN, "The outcome of the original request with this idempotency "
                + "key is unknown (it was sent, but no complete answer came back), so it is not sent again. Check "
                + "the resource's state, or retry later with the same key and payload once it has been reconciled.",
                Optional.of(retryAfter));
    }
}
