package dev.retrysafe.gateway.idempotency.reconcile;

import java.time.Duration;
import java.util.Optional;

/**
 * How a route looks up an UNCERTAIN record at its upstream: the lookup's path and query, the earliest its answer is
 * trusted, and which statuses say found and not found (anything else: asked again later).
 *
 * @param after empty: twice the route's response timeout (or in-flight lease without one), decided per request
 */
public record Reconciliation(LookupTemplate template, Optional<Duration> after, int foundStatus,
        int notFoundStatus) {
    public Reconciliation {
        after.ifPresent(delay -> {
            if (delay.isNegative() || delay.isZero()) {
                throw new IllegalArgumentException("reconcile-after must be positive, was " + delay);
            }
        });
        if (foundStatus < 200 || foundStatus > 299) {
            throw new IllegalArgumentException("reconcile-found must be a 2xx status, was " + foundStatus);
        }
        if (notFoundStatus < 400 || notFoundStatus > 499) {
            throw new IllegalArgumentException("reconcile-not-found must be a 4xx status, was " + notFoundStatus);
        }
    }
}
