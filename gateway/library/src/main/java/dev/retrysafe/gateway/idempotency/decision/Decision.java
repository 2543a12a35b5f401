package dev.retrysafe.gateway.idempotency.decision;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;

/**
 * What to do with a request whose key is already taken. Forwarding is not a decision made here: only the store's
 * atomic reservation may grant it.
 */
public sealed interface Decision {

    /** Same key, same fingerprint, final result stored: answer with it, the upstream is not called. */
    record Replay(StoredResponse response, boolean processEnded) implements Decision {
    }

    /** Same key, same fingerprint, but the stored result has no body (it exceeded the storage limit). */
    record ReplayUnavailable(int originalStatus) implements Decision {}

    /** Same key, another intent (see {@link Fingerprints#sameIntentAs}): whatever state the first request is in, this is a different intent. */
    record PayloadMismatch() implements Decision {}

    /** Same key and payload, the first request is still being processed. */
    record InFlight() implements Decision {}

    /** Same key and payload, but nobody knows whether the first request was acted on: not forwarded again. */
    record Uncertain() implements Decision {}

    static Decision against(IdempotencyRecord existing, Fingerprints request) {
        if (!request.sameIntentAs(existing.fingerprints())) {
            return new PayloadMismatch();
        }
        return switch (existing.state()) {
            case IN_FLIGHT -> new InFlight();
            case UNCERTAIN -> new Uncertain();
            case COMPLETED -> {
                StoredResponse response = existing.response()
                        .orElseThrow(() -> new IllegalStateException("A completed record without its response"));
                yield response.bodyOmitted()
                        ? new ReplayUnavailable(response.status())
                        : new Replay(response, existing.processEnded());
            }
        };
    }
}
