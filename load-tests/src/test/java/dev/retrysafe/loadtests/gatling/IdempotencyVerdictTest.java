package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.AS_AGREED;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.EVERY_MISMATCH_409;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.IDENTICAL_REPLAYS;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.ONE_FIRST_WRITE_PER_KEY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Answer;
import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Conclusion;
import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant;
import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Sent;
import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Status;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The verdict from counts: answers in, invariant lines (held / BROKEN / NOT SHOWN) and gates out; 503s are overload,
 * never a broken invariant; latency and availability are asserted only when asked for.
 */
class IdempotencyVerdictTest {

    private static final String CREATED = "{\"processId\":\"p-1\",\"status\":\"PENDING\"}";
    private static final String IN_FLIGHT = envelope(409, "A request with this idempotency key is still being "
            + "processed. Retry later with the same key and payload.");
    private static final String MISMATCH = envelope(409, LoadSettings.MISMATCH_MESSAGE);
    private static final String UNCERTAIN = envelope(409, "The outcome of the original request with this idempotency "
            + "key is unknown (it was sent, but no complete answer came back), so it is not sent again.");
    private static final String TOO_LARGE = envelope(409, "The request with this idempotency key was already "
            + "processed (status 202) but its response was larger than 10 bytes and cannot be replayed.");
    private static final String UNAVAILABLE = envelope(503, "Idempotency protection is temporarily unavailable; the "
            + "request was not processed. Retry later with the same key.");

    @Test
    void answersAreClassifiedByReplayHeaderStatusAndMessage() {
        assertThat(IdempotencyVerdict.classify(202, false, CREATED)).isEqualTo(Answer.FIRST_WRITE);
        assertThat(IdempotencyVerdict.classify(201, false, "")).isEqualTo(Answer.FIRST_WRITE);
        assertThat(IdempotencyVerdict.classify(200, true, CREATED)).isEqualTo(Answer.REPLAY);
        assertThat(IdempotencyVerdict.classify(409, true, MISMATCH)).as("a replayed stored 409").isEqualTo(Answer.REPLAY);
        assertThat(IdempotencyVerdict.classify(409, false, IN_FLIGHT)).isEqualTo(Answer.IN_FLIGHT);
        assertThat(IdempotencyVerdict.classify(409, false, MISMATCH)).isEqualTo(Answer.MISMATCH);
        assertThat(IdempotencyVerdict.classify(409, false, UNCERTAIN)).isEqualTo(Answer.UNCERTAIN);
        assertThat(IdempotencyVerdict.classify(409, false, TOO_LARGE)).isEqualTo(Answer.CONFLICT_OTHER);
        assertThat(IdempotencyVerdict.classify(409, false, "not json")).isEqualTo(Answer.CONFLICT_OTHER);
        assertThat(IdempotencyVerdict.classify(503, false, UNAVAILABLE)).isEqualTo(Answer.UNAVAILABLE);
        assertThat(IdempotencyVerdict.classify(500, false, "")).isEqualTo(Answer.OTHER);
        assertThat(IdempotencyVerdict.classify(504, false, null)).isEqualTo(Answer.OTHER);
    }

    @Test
    void aStormWithOne202PerKeyHoldsAndPrintsItsCounts() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY);
        for (String key : List.of("k1", "k2")) {
            assertThat(answer(verdict, Sent.CONCURRENT_RESEND, key, 202, false, true, CREATED)).isEqualTo(AS_AGREED);
            assertThat(answer(verdict, Sent.CONCURRENT_RESEND, key, 200, true, false, CREATED)).isEqualTo(AS_AGREED);
            assertThat(answer(verdict, Sent.CONCURRENT_RESEND, key, 409, false, true, IN_FLIGHT)).isEqualTo(AS_AGREED);
        }

        Conclusion conclusion = verdict.conclude();

        assertThat(conclusion.status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.HELD);
        assertThat(conclusion.passed()).isTrue();
        assertThat(conclusion.lines()).contains(
                row("keys sent", "2"), row("requests sent", "6"), row("first writes (2xx, not a replay)", "2"),
                row("replays (Idempotency-Replayed: true)", "2"), row("409 in flight (Retry-After)", "2"),
                row("409 payload mismatch (the contract's message)", "0"),
                row("503 store unavailable (overload, not an invariant break)", "0"),
                row("answers outside the contract", "0"),
                "> IDEMPOTENCY: HELD (every invariant held)");
        assertThat(line(conclusion, "> invariant: one 202 per key")).contains("held", "2 keys, each exactly one 2xx");
    }

    @Test
    void aSecond202ForAKeyBreaksTheInvariantAndFailsItsGate() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY);
        answer(verdict, Sent.CONCURRENT_RESEND, "k1", 202, false, false, CREATED);
        answer(verdict, Sent.CONCURRENT_RESEND, "k2", 202, false, false, CREATED);

        String second = answer(verdict, Sent.CONCURRENT_RESEND, "k1", 202, false, false, CREATED);

        assertThat(second).startsWith("INVARIANT BROKEN");
        Conclusion conclusion = verdict.conclude();
        assertThat(conclusion.status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.BROKEN);
        assertThat(line(conclusion, "> invariant: one 202 per key")).contains("BROKEN", "k1=2").doesNotContain("k2");
        assertThat(conclusion.lines()).contains("> IDEMPOTENCY: BROKEN (the run fails)");
        assertThat(conclusion.passed("invariant held: one 202 per key")).isFalse();
        assertThat(conclusion.passed("answers within the contract")).as("a broken invariant is not 'unexpected'")
                .isTrue();
        assertThat(conclusion.passed()).isFalse();
    }

    @Test
    void aKeyAnsweredOnlyAsAReplayWasNeverWritten() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY);
        answer(verdict, Sent.CONCURRENT_RESEND, "k1", 202, false, false, CREATED);
        answer(verdict, Sent.CONCURRENT_RESEND, "ghost", 200, true, false, CREATED);

        Conclusion conclusion = verdict.conclude();

        assertThat(conclusion.status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.BROKEN);
        assertThat(line(conclusion, "> invariant: one 202 per key")).contains("answered without any 2xx", "ghost");
    }

    @Test
    void a503IsOverloadNotABrokenInvariantAndFailsNothingUnlessAvailabilityIsAsserted() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY);
        answer(verdict, Sent.CONCURRENT_RESEND, "k1", 202, false, false, CREATED);
        String refused = answer(verdict, Sent.CONCURRENT_RESEND, "k1", 503, false, true, UNAVAILABLE);
        answer(verdict, Sent.NEW_KEY, "k2", 503, false, true, UNAVAILABLE);    // never written: overload
        verdict.sending("k3");                                                 // never answered

        assertThat(refused).contains("503", "overload", "not an invariant break");
        Conclusion conclusion = verdict.conclude();
        assertThat(conclusion.status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.HELD);
        assertThat(line(conclusion, "> invariant: one 202 per key"))
                .contains("1 keys, each exactly one 2xx", "2 keys not written (refused or not answered: overload)");
        assertThat(conclusion.lines()).contains(
                row("503 store unavailable (overload, not an invariant break)", "2"),
                row("no answer (timeout, connection error)", "1"),
                row("answers outside the contract", "0"));
        assertThat(line(conclusion, "> not served (503, 409 refusals, no answer)")).contains("3 of 4", "75.00%",
                "2 503, 0 409 refusals, 1 no answer: overload", "not asserted (-DmaxUnavailablePercent=N)");
        assertThat(verdict.gates()).containsExactly("invariant held: one 202 per key", "answers within the contract");
        assertThat(conclusion.passed()).isTrue();

        IdempotencyVerdict asserted = new IdempotencyVerdict("Test", "laptop", OptionalDouble.of(50),
                OptionalInt.empty(), EnumSet.of(ONE_FIRST_WRITE_PER_KEY));
        answer(asserted, Sent.NEW_KEY, "k1", 202, false, false, CREATED);
        answer(asserted, Sent.NEW_KEY, "k2", 503, false, true, UNAVAILABLE);
        assertThat(asserted.conclude().passed()).as("50% not served, at most 50% asserted").isTrue();
        answer(asserted, Sent.NEW_KEY, "k3", 503, false, true, UNAVAILABLE);
        Conclusion over = asserted.conclude();
        assertThat(over.passed("not served at most 50.00%")).as("67% not served").isFalse();
        assertThat(over.status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.HELD);
    }

    @Test
    void aSamePayloadRefusedToRetryLaterIsNotServedNeverBrokenNorOutsideTheContract() {
        // The gateway could not store k1's answer (store timeouts): its replays are told "in flight", then
        // "outcome uncertain", both with Retry-After. Nothing ran twice; the replays were not served.
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY, IDENTICAL_REPLAYS);
        answer(verdict, Sent.NEW_KEY, "k1", 202, false, false, CREATED);
        answer(verdict, Sent.NEW_KEY, "k2", 202, false, false, CREATED);
        answer(verdict, Sent.REPLAY, "k2", 200, true, false, CREATED, CREATED);

        String inFlight = answer(verdict, Sent.REPLAY, "k1", 409, false, true, IN_FLIGHT, CREATED);
        String uncertain = answer(verdict, Sent.REPLAY, "k1", 409, false, true, UNCERTAIN, CREATED);
        String stormUncertain = answer(verdict, Sent.CONCURRENT_RESEND, "k3", 409, false, true, UNCERTAIN);

        assertThat(List.of(inFlight, uncertain, stormUncertain)).allSatisfy(o -> assertThat(o)
                .contains("not served, not an invariant break"));
        Conclusion conclusion = verdict.conclude();
        assertThat(conclusion.idempotencyHeld()).isTrue();
        assertThat(conclusion.unexpectedAnswers()).isZero();
        assertThat(line(conclusion, "> invariant: one 202 per key")).contains("held", "1 keys not written");
        assertThat(line(conclusion, "> not served (503, 409 refusals, no answer)"))
                .contains("3 of 6", "0 503, 3 409 refusals, 0 no answer");
        assertThat(conclusion.lines()).contains(row("409 in flight (Retry-After)", "1"),
                row("409 outcome uncertain", "2"));
        assertThat(conclusion.passed()).isTrue();

        assertThat(answer(verdict, Sent.NEW_KEY, "k4", 409, false, true, IN_FLIGHT))
                .as("a fresh key cannot be in flight").isEqualTo("409 in flight for a new key");
        assertThat(verdict.conclude().passed("answers within the contract")).isFalse();
    }

    @Test
    void answersOutsideTheContractFailTheirGateWithoutBreakingAnInvariant() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY);
        answer(verdict, Sent.CONCURRENT_RESEND, "k1", 202, false, false, CREATED);
        String noRetryAfter = answer(verdict, Sent.CONCURRENT_RESEND, "k1", 409, false, false, IN_FLIGHT);
        String serverError = answer(verdict, Sent.CONCURRENT_RESEND, "k2", 500, false, false, "");

        assertThat(noRetryAfter).isEqualTo("409 in flight without Retry-After");
        assertThat(serverError).contains("status 500 outside the contract");
        Conclusion conclusion = verdict.conclude();
        assertThat(conclusion.status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.HELD);
        assertThat(conclusion.unexpectedAnswers()).isEqualTo(2);
        assertThat(line(conclusion, "> other statuses")).contains("{500=1}");
        assertThat(conclusion.passed("answers within the contract")).isFalse();
        assertThat(conclusion.passed()).isFalse();
    }

    @Test
    void aReplayMustRepeatTheFirstAnswerByteForByte() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY, IDENTICAL_REPLAYS);
        answer(verdict, Sent.NEW_KEY, "k1", 202, false, false, CREATED);
        assertThat(answer(verdict, Sent.REPLAY, "k1", 200, true, false, CREATED, CREATED)).isEqualTo(AS_AGREED);
        assertThat(verdict.conclude().status(IDENTICAL_REPLAYS)).isEqualTo(Status.HELD);

        String other = answer(verdict, Sent.REPLAY, "k1", 200, true, false, CREATED.replace("p-1", "p-2"), CREATED);

        assertThat(other).startsWith("INVARIANT BROKEN: replay body differs");
        Conclusion conclusion = verdict.conclude();
        assertThat(conclusion.status(IDENTICAL_REPLAYS)).isEqualTo(Status.BROKEN);
        assertThat(line(conclusion, "> invariant: byte-identical replays")).contains("1 of 2 replays differ", "k1");
        assertThat(conclusion.status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.HELD);
    }

    @Test
    void aReplayAnsweredAsAFirstWriteExecutedTheKeyTwice() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY, IDENTICAL_REPLAYS);
        answer(verdict, Sent.NEW_KEY, "k1", 202, false, false, CREATED);
        answer(verdict, Sent.REPLAY, "k1", 200, true, false, CREATED, CREATED);

        assertThat(answer(verdict, Sent.REPLAY, "k1", 202, false, false, CREATED, CREATED))
                .startsWith("INVARIANT BROKEN");
        assertThat(verdict.conclude().status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.BROKEN);
    }

    @Test
    void everyChangedPayloadMustBeTheMismatch409() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY, EVERY_MISMATCH_409);
        answer(verdict, Sent.NEW_KEY, "k1", 202, false, false, CREATED);
        assertThat(answer(verdict, Sent.CHANGED_PAYLOAD, "k1", 409, false, false, MISMATCH)).isEqualTo(AS_AGREED);
        assertThat(answer(verdict, Sent.CHANGED_PAYLOAD, "k1", 503, false, true, UNAVAILABLE)).contains("overload");
        Conclusion held = verdict.conclude();
        assertThat(held.status(EVERY_MISMATCH_409)).isEqualTo(Status.HELD);
        assertThat(line(held, "> invariant: every mismatch a 409")).contains("1 changed payloads, each 409");

        String replayed = answer(verdict, Sent.CHANGED_PAYLOAD, "k1", 200, true, false, CREATED);
        String otherConflict = answer(verdict, Sent.CHANGED_PAYLOAD, "k1", 409, false, true, IN_FLIGHT);
        String executed = answer(verdict, Sent.CHANGED_PAYLOAD, "k1", 202, false, false, CREATED);

        assertThat(List.of(replayed, otherConflict, executed)).allSatisfy(o -> assertThat(o).startsWith("INVARIANT"));
        Conclusion conclusion = verdict.conclude();
        assertThat(conclusion.status(EVERY_MISMATCH_409)).isEqualTo(Status.BROKEN);
        assertThat(line(conclusion, "> invariant: every mismatch a 409")).contains("3 of 4 changed payloads");
        assertThat(conclusion.status(ONE_FIRST_WRITE_PER_KEY)).as("the executed one is a second 2xx")
                .isEqualTo(Status.BROKEN);
    }

    @Test
    void anInvariantNothingShowedIsNotShownAndFailsTheRun() {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY, IDENTICAL_REPLAYS);
        answer(verdict, Sent.NEW_KEY, "k1", 202, false, false, CREATED);

        Conclusion conclusion = verdict.conclude();

        assertThat(conclusion.status(ONE_FIRST_WRITE_PER_KEY)).isEqualTo(Status.HELD);
        assertThat(conclusion.status(IDENTICAL_REPLAYS)).isEqualTo(Status.NOT_SHOWN);
        assertThat(line(conclusion, "> invariant: byte-identical replays")).contains("NOT SHOWN", "no replay");
        assertThat(conclusion.lines()).anyMatch(l -> l.startsWith("> IDEMPOTENCY: NOT SHOWN"));
        assertThat(conclusion.passed()).isFalse();
        assertThat(verdict(ONE_FIRST_WRITE_PER_KEY).conclude().status(ONE_FIRST_WRITE_PER_KEY))
                .as("nothing sent").isEqualTo(Status.NOT_SHOWN);
    }

    @Test
    void aStepThatCanBreakAnInvariantWithoutItsGateIsRefusedWhenTheSimulationIsBuilt() {
        IdempotencyVerdict withoutGates = verdict(ONE_FIRST_WRITE_PER_KEY);

        assertThatThrownBy(() -> withoutGates.exchange(Sent.CHANGED_PAYLOAD, null))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("EVERY_MISMATCH_409");
        assertThatThrownBy(() -> withoutGates.exchange(Sent.REPLAY, null, session -> CREATED))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("IDENTICAL_REPLAYS");
        verdict(ONE_FIRST_WRITE_PER_KEY, EVERY_MISMATCH_409, IDENTICAL_REPLAYS).requireGate(Sent.CHANGED_PAYLOAD, true);
    }

    @Test
    void latencyIsAssertedOnlyWhenAskedFor() {
        IdempotencyVerdict quiet = verdict(ONE_FIRST_WRITE_PER_KEY);
        assertThat(quiet.assertions()).hasSize(quiet.gates().size());
        assertThat(line(quiet.conclude(), "> 99th percentile")).contains("not asserted", "-DmaxP99Millis=N");

        IdempotencyVerdict asked = new IdempotencyVerdict("Test", "laptop", OptionalDouble.empty(),
                OptionalInt.of(800), EnumSet.of(ONE_FIRST_WRITE_PER_KEY));
        assertThat(asked.assertions()).hasSize(asked.gates().size() + 1);
        assertThat(line(asked.conclude(), "> 99th percentile")).contains("asserted", "below 800 ms");
    }

    @Test
    void countsStayExactWhenManyThreadsAnswerAtOnce() throws Exception {
        IdempotencyVerdict verdict = verdict(ONE_FIRST_WRITE_PER_KEY);
        int threads = 8;
        int keys = 4;
        int rounds = 5_000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Integer>> judgedFirst = new ArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                // Every thread answers each of a few keys with a 202, over and over: per key, exactly one of all
                // these may be judged the first write, and no count may be lost.
                judgedFirst.add(pool.submit(() -> {
                    start.await();
                    int first = 0;
                    for (int r = 0; r < rounds; r++) {
                        for (int k = 0; k < keys; k++) {
                            String key = "k" + k;
                            verdict.sending(key);
                            if (verdict.answered(Sent.CONCURRENT_RESEND, key, 202, false, false, CREATED, null)
                                    .equals(AS_AGREED)) {
                                first++;
                            }
                        }
                    }
                    return first;
                }));
            }
            start.countDown();
            int total = 0;
            for (Future<Integer> future : judgedFirst) {
                total += future.get(60, TimeUnit.SECONDS);
            }
            assertThat(total).as("202s judged a first write").isEqualTo(keys);
        } finally {
            pool.shutdownNow();
        }

        Conclusion conclusion = verdict.conclude();
        assertThat(conclusion.lines()).contains(row("keys sent", "4"), row("requests sent", "160,000"),
                row("first writes (2xx, not a replay)", "160,000"), row("no answer (timeout, connection error)", "0"));
        assertThat(line(conclusion, "> invariant: one 202 per key")).contains("BROKEN",
                "[k0=40000, k1=40000, k2=40000, k3=40000]");
    }

    private static IdempotencyVerdict verdict(Invariant first, Invariant... more) {
        return new IdempotencyVerdict("Test", "laptop", OptionalDouble.empty(), OptionalInt.empty(),
                EnumSet.of(first, more));
    }

    private static String answer(IdempotencyVerdict verdict, Sent what, String key, int status, boolean replayed,
            boolean retryAfter, String body) {
        return answer(verdict, what, key, status, replayed, retryAfter, body, null);
    }

    private static String answer(IdempotencyVerdict verdict, Sent what, String key, int status, boolean replayed,
            boolean retryAfter, String body, String expectedBody) {
        verdict.sending(key);
        return verdict.answered(what, key, status, replayed, retryAfter, body, expectedBody);
    }

    private static String row(String label, String value) {
        return String.format(java.util.Locale.ROOT, "> %-58s %14s", label, value);
    }

    private static String line(Conclusion conclusion, String prefix) {
        return conclusion.lines().stream().filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no line " + prefix + " in " + conclusion.lines()));
    }

    private static String envelope(int status, String message) {
        return "{\"status\":{\"status\":\"FAILED\",\"reason\":" + status + ",\"message\":\"" + message
                + "\",\"date\":\"2026-08-17T10:14:03-05:00\"}}";
    }
}
