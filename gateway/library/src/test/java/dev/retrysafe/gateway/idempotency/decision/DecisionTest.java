package dev.retrysafe.gateway.idempotency.decision;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class DecisionTest {

    private static final Fingerprints FIRST = Fingerprints.underNoRules(new Fingerprint("a".repeat(64)));
    private static final Fingerprints OTHER = Fingerprints.underNoRules(new Fingerprint("b".repeat(64)));

    private static final StoredResponse ACCEPTED = new StoredResponse(202,
            List.of(new ResponseHeader("Location", "/merchants/42"), new ResponseHeader("Content-Type", "application/json")),
            "{\"id\":42}".getBytes(StandardCharsets.UTF_8), false);

    private static final StoredResponse OMITTED = new StoredResponse(201,
            List.of(new ResponseHeader("Content-Type", "application/json")), new byte[0], true);

    @Test
    void aDifferentPayloadIsAMismatchWhileTheFirstRequestIsInFlight() {
        assertThat(Decision.against(IdempotencyRecord.inFlight(FIRST), OTHER))
                .isInstanceOf(Decision.PayloadMismatch.class);
    }

    @Test
    void aDifferentPayloadIsAMismatchOnceTheFirstRequestCompleted() {
        assertThat(Decision.against(IdempotencyRecord.completed(FIRST, ACCEPTED), OTHER))
                .isInstanceOf(Decision.PayloadMismatch.class);
    }

    @Test
    void aDifferentPayloadIsAMismatchEvenWhenTheStoredBodyWasOmitted() {
        assertThat(Decision.against(IdempotencyRecord.completed(FIRST, OMITTED), OTHER))
                .isInstanceOf(Decision.PayloadMismatch.class);
    }

    @Test
    void theSamePayloadWhileInFlightWaits() {
        assertThat(Decision.against(IdempotencyRecord.inFlight(FIRST), Fingerprints.underNoRules(new Fingerprint("a".repeat(64)))))
                .isInstanceOf(Decision.InFlight.class);
    }

    @Test
    void theSamePayloadOnceCompletedReplaysTheStoredResponse() {
        Decision decision = Decision.against(IdempotencyRecord.completed(FIRST, ACCEPTED), FIRST);

        assertThat(decision).isInstanceOf(Decision.Replay.class);
        assertThat(((Decision.Replay) decision).response()).isSameAs(ACCEPTED);
    }

    @Test
    void aCompletedResponseWithoutItsBodyCannotBeReplayedAndKeepsTheOriginalStatus() {
        Decision decision = Decision.against(IdempotencyRecord.completed(FIRST, OMITTED), FIRST);

        assertThat(decision).isEqualTo(new Decision.ReplayUnavailable(201));
    }

    @Test
    void underOtherRulesTheSameStrictFingerprintReplaysAndAnotherIsAMismatch() {
        Fingerprint strict = new Fingerprint("c".repeat(64));
        Fingerprints stored = new Fingerprints(new Fingerprint("a".repeat(64)), strict, "c1;arrays=sites");
        Fingerprints changedRoute = new Fingerprints(new Fingerprint("d".repeat(64)), strict,
                "c1;arrays=sites;ignore=/sentAt");

        assertThat(Decision.against(IdempotencyRecord.completed(stored, ACCEPTED), changedRoute))
                .isInstanceOf(Decision.Replay.class);
        assertThat(Decision.against(IdempotencyRecord.inFlight(stored), changedRoute))
                .isInstanceOf(Decision.InFlight.class);
        assertThat(Decision.against(IdempotencyRecord.completed(stored, ACCEPTED), new Fingerprints(
                new Fingerprint("d".repeat(64)), new Fingerprint("e".repeat(64)), "c1;arrays=sites;ignore=/sentAt")))
                .isInstanceOf(Decision.PayloadMismatch.class);
        assertThat(Decision.against(IdempotencyRecord.completed(stored, ACCEPTED), new Fingerprints(
                new Fingerprint("d".repeat(64)), strict, "c1;arrays=sites")))
                .as("the same rules: the strict fingerprint is not asked").isInstanceOf(Decision.PayloadMismatch.class);
    }
}
