package dev.retrysafe.gateway.idempotency.record;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import java.util.Objects;
import java.util.Optional;

/**
 * What the store holds for one scope: its state, the fingerprints of the request that reserved it (with the rules
 * they were taken under) and, once completed, the response to replay. The response is only loaded when the caller is
 * the same intent.
 * {@code processEnded} says that the process a stored 202 started has ended (see process-aware retention).
 */
public record IdempotencyRecord(RecordState state, Fingerprints fingerprints, Optional<StoredResponse> response,
        boolean processEnded) {
    public IdempotencyRecord {
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(fingerprints, "fingerprints");
        Objects.requireNonNull(response, "response");
    }

    public IdempotencyRecord(RecordState state, Fingerprints fingerprints, Optional<StoredResponse> response) {
        this(state, fingerprints, response, false);
    }

    public static IdempotencyRecord inFlight(Fingerprints fingerprints) {
        return new IdempotencyRecord(RecordState.IN_FLIGHT, fingerprints, Optional.empty());
    }

    public static IdempotencyRecord completed(Fingerprints fingerprints, StoredResponse response) {
        return new IdempotencyRecord(RecordState.COMPLETED, fingerprints, Optional.of(response));
    }

    public static IdempotencyRecord uncertain(Fingerprints fingerprints) {
        return new IdempotencyRecord(RecordState.UNCERTAIN, fingerprints, Optional.empty());
    }
}
