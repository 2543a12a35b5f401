package dev.retrysafe.gateway.idempotency.decision;

import java.util.Set;

/**
 * Which upstream statuses are results. Statuses in {@code releaseOnStatus} (by default 401, 403, 408, 425, 429,
 * 503) say the request was not acted on, so the reservation is freed and a retry goes through. Every other
 * status, 500 included, is final: the backend may have acted before failing, so it is stored and replayed.
 */
public record OutcomePolicy(Set<Integer> releaseOnStatus) {
    public OutcomePolicy {
        releaseOnStatus = Set.copyOf(releaseOnStatus);
    }

    public boolean isFinal(int status) {
        return !releaseOnStatus.contains(status);
    }
}
