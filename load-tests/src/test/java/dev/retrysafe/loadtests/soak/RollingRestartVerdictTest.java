package dev.retrysafe.loadtests.soak;

import static dev.retrysafe.loadtests.soak.RollingRestartVerdict.Invariant.EVERY_PROCESS_ENDED;
import static dev.retrysafe.loadtests.soak.RollingRestartVerdict.Invariant.NO_LOST_RESULT;
import static dev.retrysafe.loadtests.soak.RollingRestartVerdict.Invariant.NO_STUCK_RECORD;
import static dev.retrysafe.loadtests.soak.RollingRestartVerdict.Invariant.ONE_WRITE_PER_KEY;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.loadtests.soak.RollingRestartVerdict.Invariant;
import dev.retrysafe.loadtests.soak.RollingRestartVerdict.Record;
import dev.retrysafe.loadtests.soak.RollingRestartVerdict.Status;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Each invariant of the soak's end check breaks on the fact that breaks it, and only on that one. */
class RollingRestartVerdictTest {

    private static final Record ENDED_P1 = new Record("COMPLETED", 202, "p1", "ENDED");
    private static final Record ENDED_P2 = new Record("COMPLETED", 202, "p2", "ENDED");

    private final Map<String, List<String>> writes = new HashMap<>(Map.of("k1", List.of("p1"), "k2", List.of("p2")));
    private final Map<String, Optional<Record>> records = new HashMap<>(Map.of(
            "k1", Optional.of(ENDED_P1), "k2", Optional.of(ENDED_P2), "k3", Optional.empty()));
    private final Set<String> sent = Set.of("k1", "k2", "k3");

    @Test
    void aFleetThatKeptItsPromisesHoldsEveryInvariant() {
        RollingRestartVerdict verdict = RollingRestartVerdict.judge(sent, writes, records, List.of());

        assertThat(verdict.held()).isTrue();
        assertThat(verdict.report()).contains("keys sent 3, written by the upstream 2, never written 1, records "
                + "naming a process 2").contains("VERDICT: every invariant held");
    }

    @Test
    void aKeyWrittenTwiceBreaksOneWritePerKey() {
        writes.put("k1", List.of("p1", "p9"));

        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of()), ONE_WRITE_PER_KEY,
                "key k1 written 2 times: processes [p1, p9]");
    }

    @Test
    void aWriteForAKeyTheLoadNeverSentBreaksOneWritePerKey() {
        writes.put("stranger", List.of("p7"));

        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of()), ONE_WRITE_PER_KEY,
                "key stranger written but never sent");
    }

    @Test
    void aWrittenKeyWithoutARecordIsALostResult() {
        records.put("k2", Optional.empty());

        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of()), NO_LOST_RESULT,
                "key k2 written (process p2) but has no record");
    }

    @Test
    void aRecordReplayingAnotherProcessThanTheOneWrittenIsALostResult() {
        records.put("k2", Optional.of(new Record("COMPLETED", 202, "p5", "ENDED")));

        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of()), NO_LOST_RESULT,
                "key k2 written as process p2 but its record replays process p5");
    }

    @Test
    void aResultTheUpstreamNeverProducedIsALostResultButAnErrorAnswerIsNot() {
        records.put("k3", Optional.of(new Record("COMPLETED", 202, "p3", "ENDED")));
        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of()), NO_LOST_RESULT,
                "key k3 has a 202 result (process p3) the upstream never produced");

        records.put("k3", Optional.of(new Record("COMPLETED", 400, null, null)));
        assertThat(RollingRestartVerdict.judge(sent, writes, records, List.of()).held()).isTrue();
    }

    @Test
    void aRecordLeftUncertainOrInFlightIsStuck() {
        records.put("k2", Optional.of(new Record("UNCERTAIN", 0, null, null)));
        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of()), NO_STUCK_RECORD,
                "key k2 is UNCERTAIN");

        records.put("k2", Optional.of(ENDED_P2));
        records.put("k3", Optional.of(new Record("IN_FLIGHT", 0, null, null)));
        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of()), NO_STUCK_RECORD,
                "key k3 is IN_FLIGHT");
    }

    @Test
    void anyScopeInTheIndexOfUnsettledRecordsIsStuck() {
        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of("scopeA")), NO_STUCK_RECORD,
                "scope scopeA is in the index of unsettled records");
    }

    @Test
    void aProcessStillPendingBreaksEveryProcessEnded() {
        records.put("k1", Optional.of(new Record("COMPLETED", 202, "p1", "PENDING")));

        assertOnlyBroken(RollingRestartVerdict.judge(sent, writes, records, List.of()), EVERY_PROCESS_ENDED,
                "key k1: process p1 is PENDING");
    }

    @Test
    void aRunInWhichNoRecordNamedAProcessHasNotShownThatInvariant() {
        RollingRestartVerdict verdict = RollingRestartVerdict.judge(Set.of("k3"), Map.of(),
                Map.of("k3", Optional.empty()), List.of());

        assertThat(verdict.status(EVERY_PROCESS_ENDED)).isEqualTo(Status.NOT_SHOWN);
        assertThat(verdict.held()).isFalse();
    }

    @Test
    void theWriteLogIsReadByKeyInOrderSkippingLinesThatAreNotWrites() {
        Map<String, List<String>> parsed = RollingRestartCheck.writesByKey(List.of(
                "1\tPOST\t/merchants\tk1\tp1", "garbage", "2\tPOST\t/merchants\tk2\tp2", "3\tPOST\t/merchants\tk1\tp3"));

        assertThat(parsed).containsOnlyKeys("k1", "k2");
        assertThat(parsed.get("k1")).containsExactly("p1", "p3");
    }

    private static void assertOnlyBroken(RollingRestartVerdict verdict, Invariant invariant, String sample) {
        for (Invariant each : Invariant.values()) {
            assertThat(verdict.status(each)).as(each.label).isEqualTo(each == invariant ? Status.BROKEN : Status.HELD);
        }
        assertThat(verdict.held()).isFalse();
        assertThat(verdict.report()).contains(sample).contains("VERDICT: BROKEN");
    }
}
