package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.UncertainMark;
import java.time.Duration;
import java.util.Optional;

/** UNCERTAIN marks for tests of a record that is there: what it would be written anew with does not matter. */
public final class Marks {
    private static final Fingerprints ANY = Fingerprints.underNoRules(new Fingerprint("0".repeat(64)));

    private Marks() {
    }

    public static UncertainMark uncertain(IdempotencyScope scope, OwnerToken owner, String reason, Duration ttl) {
        return new UncertainMark(scope, owner, reason, ttl, ANY, "http://upstream", Optional.empty());
    }
}
