package dev.retrysafe.gateway.idempotency.store;

/**
 * A completed record whose stored response cannot be read back: it was encrypted under a key that is no longer
 * configured, its ciphertext does not belong to this record, or it holds what HTTP cannot carry (a header with CR/LF,
 * put in the store by hand). The request was processed; only its replay is lost, so it must not be sent again.
 */
public final class StoredResponseUnreadable extends RuntimeException {
    private final int originalStatus;

    public StoredResponseUnreadable(int originalStatus, String reason) {
        super("Stored response (status " + originalStatus + ") cannot be read: " + reason);
        this.originalStatus = originalStatus;
    }

    public int originalStatus() {
        return originalStatus;
    }
}
