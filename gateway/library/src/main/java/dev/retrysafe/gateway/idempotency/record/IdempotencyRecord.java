package dev.retrysafe.gateway.idempotency.record;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import java.util.Objects;
import java.util.Optional;

/**
 * What the store holds for one scope: its state, the fingerprint of the request that reserved it and, once
 * completed, the response to replay. The response is only loaded when the caller's fingerprint matches.
 * {@code processEnded} says that the process a stored 202 started has ended (see process-aware retention).
 */
public record IdempotencyRecord(RecordState state, Fingerprint fingerprint, Optional<StoredResponse> response,
        boolean processEnded) {
    public IdempotencyRecord {
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(response, "response");
    }

    public IdempotencyRecord(RecordState state, Fingerprint fingerprint, Optional<StoredResponse> response) {
        this(state, fingerprint, response, false);
    }

    public static IdempotencyRecord inFlight(Fingerprint fingerprint) {
        return new IdempotencyRecord(RecordState.IN_FLIGHT, fingerprint, Optional.empty());
    }

    public static IdempotencyRecord completed(Fingerprint fingerprint, StoredResponse response) {
        return new IdempotencyRecord(RecordState.COMPLETED, fingerprint, Optional.of(response));
    }

    public static IdempotencyRecord uncertain(Fingerprint fingerprint) {
        return new IdempotencyRecord(RecordState.UNCERTAIN, fingerprint, Optional.empty());
    }
}
