package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;
import java.util.Optional;

/**
 * One reservation attempt.
 *
 * @param lease           how long the reservation holds unless renewed
 * @param recordTtl       how long an unsettled record may exist at all (an uncertain one is kept this long)
 * @param upstream        where the request goes, kept for operators looking at an uncertain record
 * @param willWait        the caller will wait for an in-flight record, so settling it must wake the caller
 * @param retakeUncertain the upstream dedupes on the forwarded key: an uncertain record may be sent again
 * @param method          the request's method, and {@code path} its raw path (no query), kept on a new record so
 *                        that an operator reconciling it knows which call to look for at the backend; empty when
 *                        unknown
 * @param lookup          on a reconciling route, what a lookup of the record at the upstream needs, kept with a new
 *                        record
 */
public record ReservationRequest(IdempotencyScope scope, Fingerprints fingerprints, OwnerToken owner, Duration lease,
        Duration recordTtl, String upstream, boolean willWait, boolean retakeUncertain, String method, String path,
        Optional<LookupValues> lookup) {
    /** A stored path is cut at this many characters: enough to recognise the call, bounded in every record. */
    public static final int MAX_PATH_LENGTH = 512;

    public ReservationRequest {
        if (path.length() > MAX_PATH_LENGTH) {
            path = path.substring(0, MAX_PATH_LENGTH - 3) + "...";
        }
    }
}
