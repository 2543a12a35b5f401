package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.FIRST_BODY;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.EVERY_MISMATCH_409;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.IDENTICAL_REPLAYS;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.ONE_FIRST_WRITE_PER_KEY;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.KEY;
import static dev.retrysafe.loadtests.gatling.LoadSettings.KEY_HEADER;
import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.doIf;
import static io.gatling.javaapi.core.CoreDsl.during;
import static io.gatling.javaapi.core.CoreDsl.rampUsers;
import static io.gatling.javaapi.core.CoreDsl.repeat;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;

import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Sent;
import io.gatling.javaapi.core.ChainBuilder;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import java.time.Duration;

/**
 * Key reuse with a changed payload, e.g. a client bug that recycles keys: after the first write (2xx), every request
 * with the same key and a different payload (one field changed each time: legalName, taxId, a nested settings value,
 * an extra payment method...) must answer 409 with the envelope message
 * {@value LoadSettings#MISMATCH_MESSAGE}; the upstream is not called. A final resend of the original payload must
 * still be a replay of the first answer, byte for byte: the conflicting attempts did not disturb the stored result.
 * The verdict's invariants: every mismatch a 409, byte-identical replays and one 202 per key. A key whose first write was not served
 * (e.g. 503 under overload) is not reused: its changed payloads would be first writes.
 *
 * <p>Closed model: {@code users} virtual users, ramped up over {@code rampSeconds}, looping for
 * {@code durationSeconds} over: one new key, {@code mismatches} changed payloads, one replay of the original;
 * {@code pauseMillis} between requests. Per profile (laptop / ci / soak / smoke): users 10 / 4 / 10 / 2, ramp
 * 5 / 2 / 10 / 1 s, mismatches 5 / 3 / 5 / 3, duration 30 / 10 / 1800 / 3 s, pause 50 / 50 / 200 / 50 ms.
 */
public class MismatchSimulation extends Simulation {

    private final LoadSettings settings = LoadSettings.load();
    //                                                              laptop  ci  soak  smoke
    private final int users = settings.integer("users",                 10,  4,   10,    2);
    private final Duration ramp = settings.seconds("rampSeconds",         5,  2,   10,    1);
    private final int mismatches = settings.integer("mismatches",         5,  3,    5,    3);
    private final Duration duration = settings.seconds("durationSeconds", 30, 10, 1800,    3);
    private final int pauseMillis = settings.integer("pauseMillis",      50, 50,  200,   50);
    private final IdempotencyVerdict verdict = IdempotencyVerdict.of("MismatchSimulation", settings,
            ONE_FIRST_WRITE_PER_KEY, EVERY_MISMATCH_409, IDENTICAL_REPLAYS);

    private ChainBuilder paced(ChainBuilder chain) {
        return pauseMillis > 0 ? chain.pause(Duration.ofMillis(pauseMillis)) : chain;
    }

    {
        ChainBuilder firstWrite = paced(UniqueKeysSimulation.firstWrite(settings, verdict, "first write"));
        ChainBuilder changedPayload = paced(verdict.exchange(Sent.CHANGED_PAYLOAD,
                http("same key, changed payload").post(settings.target())
                        .header(KEY_HEADER, "#{key}")
                        .body(StringBody(session ->
                                MerchantPayloads.changedJson(session.getString(KEY), session.getInt("variant"))))));
        ChainBuilder originalAgain = paced(verdict.exchange(Sent.REPLAY,
                http("same key, original payload again").post(settings.target())
                        .header(KEY_HEADER, "#{key}")
                        .body(StringBody(session -> MerchantPayloads.json(session.getString(KEY)))),
                session -> session.getString(FIRST_BODY)));

        ScenarioBuilder mismatch = scenario("Key reused with another payload").exec(during(duration).on(
                firstWrite,
                doIf(IdempotencyVerdict::answeredAsAgreed).then(
                        repeat(mismatches, "variant").on(changedPayload),
                        originalAgain)));

        System.out.println(settings.describe("MismatchSimulation", users + " users, " + mismatches
                + " changed payloads per key, " + duration.toSeconds() + " s, " + pauseMillis
                + " ms between requests"));
        setUp(verdict.followedByVerdict(mismatch.injectOpen(rampUsers(users).during(ramp))))
                .protocols(settings.protocol())
                .assertions(verdict.assertions());
    }

    @Override
    public void after() {
        verdict.print();
    }
}
