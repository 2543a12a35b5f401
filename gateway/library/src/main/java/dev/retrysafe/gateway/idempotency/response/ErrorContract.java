package dev.retrysafe.gateway.idempotency.response;

import dev.retrysafe.gateway.idempotency.response.GatewayError.Kind;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * How a route words the answers the gateway produces itself (route arg {@code contract}): the status of each
 * {@link Kind}, the media type and the body. The kinds, their messages and their headers (Retry-After) are the same
 * under every contract.
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
    },

    /**
     * draft-ietf-httpapi-idempotency-key-header: a key missing or invalid is 400, a key reused with another payload
     * 422, a request still in flight 409; RFC 9457 problem details ({@link ProblemDetails}). The draft names no
     * status for an invalid key: 400, as for a missing one (the request is malformed, whatever its payload). The
     * tenant header naming two tenants is 400 too, since 422 is the draft's answer to a reused key.
     */
    IETF {
        /** Where the draft speaks (the key, its reuse) its status; every other answer as the Onboarding contract's. */
        @Override
        public int status(Kind kind) {
            return switch (kind) {
                case KEY_MISSING, KEY_INVALID, TENANT_INVALID -> 400;
                case PAYLOAD_MISMATCH -> 422;
                default -> ONBOARDING.status(kind);
            };
        }

        @Override
        public String mediaType() {
            return ProblemDetails.MEDIA_TYPE;
        }

        @Override
        public byte[] body(GatewayError error, OffsetDateTime at) {
            return ProblemDetails.json(error.kind(), status(error.kind()), error.message());
        }
    };

    /** The contract a route arg or property names, without regard to case. */
    public static ErrorContract named(String name) {
        for (ErrorContract contract : values()) {
            if (contract.argValue().equalsIgnoreCase(name.trim())) {
                return contract;
            }
        }
        throw new IllegalArgumentException("contract must be one of " + Arrays.stream(values())
                .map(ErrorContract::argValue).collect(Collectors.joining(", ")) + "; was '" + name + "'");
    }

    /** As written in a route's args: {@code onboarding}, {@code ietf}. */
    public String argValue() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The HTTP status this contract answers {@code kind} with. */
    public abstract int status(Kind kind);

    /** The Content-Type of its error bodies. */
    public abstract String mediaType();

    /** The error body, dated {@code at} where the contract dates its bodies. */
    public abstract byte[] body(GatewayError error, OffsetDateTime at);
}
