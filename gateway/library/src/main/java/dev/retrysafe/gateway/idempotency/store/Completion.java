package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;
import java.util.Optional;

/**
 * A final response to store. The fingerprints and upstream are only used if the record has to be written anew.
 *
 * @param ttl       how long the record lives from now: the retention, or the hard cap while a process is unfinished
 * @param processId the process the response started, when the route tracks processes
 */
public record Completion(IdempotencyScope scope, OwnerToken owner, Fingerprints fingerprints, String upstream,
        StoredResponse response, Duration ttl, Optional<String> processId) {
}
