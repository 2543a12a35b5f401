package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;
import java.util.Optional;

/**
 * The owner's word that its request was sent but no complete answer came back. The fingerprints, upstream and
 * lookup values are only used if the record has to be written anew (Redis lost it while the request was out): the
 * mark then writes the record UNCERTAIN, as a late complete writes it COMPLETED, so that the retry is not forwarded
 * as if the request had never been sent.
 *
 * @param ttl    how long the UNCERTAIN record may exist at all
 * @param lookup on a reconciling route, what its lookup names: a record written anew is looked up as the lost one
 *               would have been
 */
public record UncertainMark(IdempotencyScope scope, OwnerToken owner, String reason, Duration ttl,
        Fingerprints fingerprints, String upstream, Optional<LookupValues> lookup) {
}
