package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;

/**
 * One reservation attempt.
 *
 * @param lease           how long the reservation holds unless renewed
 * @param recordTtl       how long an unsettled record may exist at all (an uncertain one is kept this long)
 * @param upstream        where the request goes, kept for operators looking at an uncertain record
 * @param willWait        the caller will wait for an in-flight record, so settling it must wake the caller
 * @param retakeUncertain the upstream dedupes on the forwarded key: an uncertain record may be sent again
 */
public record ReservationRequest(IdempotencyScope scope, Fingerprint fingerprint, OwnerToken owner, Duration lease,
        Duration recordTtl, String upstream, boolean willWait, boolean retakeUncertain) {
}
