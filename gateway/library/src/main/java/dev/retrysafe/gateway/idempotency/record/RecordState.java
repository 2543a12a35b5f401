package dev.retrysafe.gateway.idempotency.record;

/**
 * Where a reserved idempotency key stands.
 * <pre>
 *   (free) --reserve--> IN_FLIGHT --final answer--> COMPLETED --retention--> (free)
 *                           |  \--not a result (connection refused, 429, 503...)--> (free)
 *                           |
 *                           +--timeout / broken connection / lease lapsed--> UNCERTAIN --retention--> (free)
 *                                                                              |  operator: release / complete
 * </pre>
 */
public enum RecordState {
    /** Reserved by one request whose upstream exchange has not finished yet. */
    IN_FLIGHT,
    /** The upstream answered with a final result, stored for replay until retention ends. */
    COMPLETED,
    /**
     * The request was sent but no complete answer came back, or its gateway instance died: the upstream may or may
     * not have acted. Neither a failure nor a licence to resend.
     */
    UNCERTAIN
}
