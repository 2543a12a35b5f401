package dev.retrysafe.gateway.idempotency.response;

import java.time.Duration;
import java.util.Optional;

/**
 * Every answer the gateway produces itself, with its status and the message integrators read. Messages never
 * contain the key, the tenant or the body.
 */
public record GatewayError(int status, String message, Optional<Duration> retryAfter) {

    public static final String PAYLOAD_MISMATCH_MESSAGE =
            "The idempotency key was already used with a different payload.";

    /** Also the text of the request framing guard's own 400, which answers before any route runs. */
    public static final String MALFORMED_BODY_MESSAGE = "The request body is malformed (its chunked framing could "
            + "not be decoded); the request was not processed.";

    public static GatewayError invalidKey(String message) {
        return new GatewayError(422, message, Optional.empty());
    }

    public static GatewayError invalidTenant(String header) {
        return new GatewayError(422, "The " + header + " header must name one tenant: it was sent with different "
                + "values, or with a comma-separated list.", Optional.empty());
    }

    public static GatewayError payloadMismatch() {
        return new GatewayError(409, PAYLOAD_MISMATCH_MESSAGE, Optional.empty());
    }

    public static GatewayError stillInFlight(Duration retryAfter) {
        return new GatewayError(409, "A request with this idempotency key is still being processed. "
                + "Retry later with the same key and payload.", Optional.of(retryAfter));
    }

    public static GatewayError replayUnavailable(int originalStatus, long limitBytes) {
        return new GatewayError(409, "The request with this idempotency key was already processed (status "
                + originalStatus + ") but its response was larger than " + limitBytes
                + " bytes and cannot be replayed. Do not resend it with a new key: check the resource's state.",
                Optional.empty());
    }

    public static GatewayError replayUnreadable(int originalStatus) {
        return new GatewayError(409, "The request with this idempotency key was already processed (status "
                + originalStatus + ") but its stored response can no longer be read and cannot be replayed. Do not "
                + "resend it with a new key: check the resource's state.", Optional.empty());
    }

    public static GatewayError bodyTooLarge(long limitBytes) {
        return new GatewayError(413, "The request body is larger than the limit of " + limitBytes + " bytes.",
                Optional.empty());
    }

    public static GatewayError bodyTimeout(Duration limit) {
        return new GatewayError(408, "The request body did not arrive completely within " + limit.toSeconds()
                + " seconds; the request was not processed. Send it again with the same key.", Optional.empty());
    }

    public static GatewayError malformedBody() {
        return new GatewayError(400, MALFORMED_BODY_MESSAGE + " Send it again, well framed, with the same key.",
                Optional.empty());
    }

    /** Never seen by the client that caused it (its connection is gone); named for the log and the metrics. */
    public static GatewayError bodyIncomplete() {
        return new GatewayError(400, "The request body did not arrive completely; the request was not processed. "
                + "Send it again with the same key.", Optional.empty());
    }

    public static GatewayError storeUnavailable(Duration retryAfter) {
        return new GatewayError(503, "Idempotency protection is temporarily unavailable; the request was not "
                + "processed. Retry later with the same key.", Optional.of(retryAfter));
    }

    public static GatewayError upstreamUnreachable(Duration retryAfter) {
        return new GatewayError(502, "The upstream service could not be reached; the request was not processed. "
                + "Retry with the same key.", Optional.of(retryAfter));
    }

    public static GatewayError outcomeUnknownTimeout() {
        return new GatewayError(504, "The upstream service did not answer in time; the outcome of the request is "
                + "unknown. Retry with the same key and payload; do not use a new key.", Optional.empty());
    }

    public static GatewayError outcomeUnknownBroken() {
        return new GatewayError(502, "The connection to the upstream service broke after the request was sent; the "
                + "outcome of the request is unknown. Retry with the same key and payload; do not use a new key.",
                Optional.empty());
    }

    public static GatewayError uncertainRetry(Duration retryAfter) {
        return new GatewayError(409, "The outcome of the original request with this idempotency key is unknown "
                + "(it was sent, but no complete answer came back), so it is not sent again. Check the resource's "
                + "state, or retry later with the same key and payload once it has been reconciled.",
                Optional.of(retryAfter));
    }
}
