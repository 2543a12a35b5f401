package dev.retrysafe.gateway.idempotency.record;

/** Where a reserved idempotency key stands. */
public enum RecordState {
    /** Reserved by one request whose upstream exchange has not finished yet. */
    IN_FLIGHT,
    /** The upstream answered with a final result, stored for replay until retention ends. */
    COMPLETED
}
