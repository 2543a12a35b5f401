package dev.retrysafe.gateway.idempotency.response;

import dev.retrysafe.gateway.idempotency.response.GatewayError.Kind;
import java.time.OffsetDateTime;

/**
 * How a route words the answers the gateway produces itself: the status of each {@link Kind}, the media type and the
 * body. The kinds, their messages and their headers (Retry-After) are the same under every contract.
 */
public enum ErrorContract {

    /** The Onboarding API's: the {@link ErrorEnvelope}, {@code application/json}; a key rejected is 422. */
    ONBOARDING {
        @Override
        public int status(Kind kind) {
            return switch (kind) {
                case KEY_MISSING, KEY_INVALID, TENANT_INVALID -> 422;
                case PAYLOAD_MISMATCH, IN_FLIGHT, OUTCOME_UNCERTAIN, REPLAY_TOO_LARGE, REPLAY_UNREADABLE -> 409;
                case BODY_TOO_LARGE -> 413;
                case BODY_TIMEOUT -> 408;
                case BODY_MALFORMED, BODY_INCOMPLETE -> 400;
                case STORE_UNAVAILABLE -> 503;
                case UPSTREAM_UNREACHABLE, UPSTREAM_BROKEN -> 502;
                case UPSTREAM_TIMEOUT -> 504;
            };
        }

        @Override
        public String mediaType() {
            return "application/json";
        }

        @Override
        public byte[] body(GatewayError error, OffsetDateTime at) {
            return ErrorEnvelope.json(status(error.kind()), error.message(), at);
        }
    };

    /** The HTTP status this contract answers {@code kind} with. */
    public abstract int status(Kind kind);

    /** The Content-Type of its error bodies. */
    public abstract String mediaType();

    /** The error body, dated {@code at} where the contract dates its bodies. */
    public abstract byte[] body(GatewayError error, OffsetDateTime at);
}
