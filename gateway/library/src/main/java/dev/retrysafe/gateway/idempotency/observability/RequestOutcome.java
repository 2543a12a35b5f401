package dev.retrysafe.gateway.idempotency.observability;

/**
 * How one guarded request ended, as counted in {@code idempotency.requests{outcome}} and written in the request log
 * line. Each value is one row of the outcome table in docs/operations/metrics-and-logs.md; the tag value is the lower-case, hyphenated name.
 */
public enum RequestOutcome {
    /** Reserved and forwarded; the upstream's final answer was stored for replay. */
    FIRST("first"),
    /** Answered from the stored result; the upstream was not called. */
    REPLAY("replay"),
    /** Same key, other payload: 409, upstream not called. */
    MISMATCH("mismatch"),
    /** Same key and payload still in flight after the wait: 409 with Retry-After. */
    IN_FLIGHT_CONFLICT("in-flight-conflict"),
    /** Same key and payload, the original's outcome is UNCERTAIN: 409 with Retry-After, not sent again. */
    UNCERTAIN("uncertain"),
    /** Key missing, repeated, too short, too long or with bad characters: 422. */
    INVALID_KEY("invalid-key"),
    /** The tenant header names more than one tenant (sent with different values, or a list): 422, nothing reserved. */
    INVALID_TENANT("invalid-tenant"),
    /** Redis unreachable or too slow: 503 with Retry-After (fail closed). */
    STORE_UNAVAILABLE("store-unavailable"),
    /** Request body over {@code max-request-bytes}: 413. */
    TOO_LARGE("too-large"),
    /** The request body did not arrive within {@code request-body-timeout}: 408, nothing reserved. */
    BODY_TIMEOUT("body-timeout"),
    /** The request body's framing could not be decoded (bad chunks or trailer): 400, nothing reserved. */
    MALFORMED_BODY("malformed-body"),
    /** The connection ended before the whole request body arrived: nothing reserved, nobody left to answer. */
    BODY_INCOMPLETE("body-incomplete"),
    /** Same key and payload, but the original response was too large to keep: 409. */
    REPLAY_UNAVAILABLE("replay-unavailable"),
    /** Same key and payload, but the stored response can no longer be read (its encryption key was removed): 409. */
    REPLAY_UNREADABLE("replay-unreadable"),
    /** Forwarded; the upstream answered with a status that is not a result (release-on-status), nothing stored. */
    RELEASED("released"),
    /** The upstream could not be reached (nothing sent): 502 with Retry-After, reservation released. */
    UPSTREAM_UNREACHABLE("upstream-unreachable"),
    /** Sent, but no complete answer (timeout, broken connection or body): 502/504, record UNCERTAIN. */
    OUTCOME_UNKNOWN("outcome-unknown"),
    /** Redis unreachable with {@code store-unavailable: forward}: passed to the upstream unprotected. */
    FORWARDED_UNPROTECTED("forwarded-unprotected"),
    /** The client went away before any answer was decided (e.g. while waiting for an in-flight original). */
    CLIENT_GONE("client-gone"),
    /** An unexpected failure ended the request; the gateway log has its cause. */
    ERROR("error");

    private final String tag;

    RequestOutcome(String tag) {
        this.tag = tag;
    }

    /** The value of the {@code outcome} tag and of {@code outcome=} in the log line. */
    public String tag() {
        return tag;
    }
}
