package dev.retrysafe.gateway.idempotency.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What a client's path can put into every record it reserves: bounded, whatever it sends. */
class ReservationRequestTest {
    final IdempotencyScope scope = new IdempotencyScope("", "r", new IdempotencyKey("a-key-long-enough-1"));
    final Fingerprints fingerprint = Fingerprints.underNoRules(new Fingerprint("0".repeat(64)));

    @Test
    void aLongPathIsCutToTheBoundAndMarkedAsCut() {
        String path = request("/merchants/" + "a".repeat(5000)).path();
        assertThat(path).hasSize(ReservationRequest.MAX_PATH_LENGTH).startsWith("/merchants/aaa").endsWith("...");
    }

    @Test
    void aPathWithinTheBoundIsKeptAsSent() {
        assertThat(request("/merchants/m-1").path()).isEqualTo("/merchants/m-1");
        String exactly = "/" + "b".repeat(ReservationRequest.MAX_PATH_LENGTH - 1);
        assertThat(request(exactly).path()).isEqualTo(exactly);
    }

    private ReservationRequest request(String path) {
        return new ReservationRequest(scope, fingerprint, OwnerToken.random(), Duration.ofSeconds(60),
                Duration.ofHours(24), "http://upstream", false, false, "POST", path, Optional.empty());
    }
}
