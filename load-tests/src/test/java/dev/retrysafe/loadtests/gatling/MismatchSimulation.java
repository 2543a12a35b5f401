package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.LoadSettings.KEY_HEADER;
import static dev.retrysafe.loadtests.gatling.LoadSettings.MISMATCH_MESSAGE;
import static dev.retrysafe.loadtests.gatling.LoadSettings.REPLAYED_HEADER;
import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.during;
import static io.gatling.javaapi.core.CoreDsl.exec;
import static io.gatling.javaapi.core.CoreDsl.global;
import static io.gatling.javaapi.core.CoreDsl.jsonPath;
import static io.gatling.javaapi.core.CoreDsl.rampUsers;
import static io.gatling.javaapi.core.CoreDsl.repeat;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.header;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

import io.gatling.javaapi.core.ChainBuilder;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import java.time.Duration;

/**
 * Key reuse with a changed payload, e.g. a client bug that recycles keys: after the first write (2xx), every request
 * with the same key and a different payload (one field changed each time: legalName, taxId, a nested settings value,
 * an extra payment method...) must answer 409 with the envelope message
 * {@value LoadSettings#MISMATCH_MESSAGE}; the upstream is not called. A final resend of the original payload must
 * still be a replay (200): the conflicting attempts did not disturb the stored result.
 *
 * <p>Closed model: {@code users} virtual users (default 50; smoke 2), ramped up over {@code rampSeconds} (default 10;
 * smoke 1), looping for {@code durationSeconds} (default 45; smoke 3) over: one new key, {@code mismatches} changed
 * payloads (default 5; smoke 3), one replay of the original; {@code pauseMillis} between requests.
 */
public class MismatchSimulation extends Simulation {

    private final LoadSettings settings = LoadSettings.load();
    private final int users = settings.integer("users", 50, 2);
    private final Duration ramp = settings.seconds("rampSeconds", 10, 1);
    private final Duration duration = settings.seconds("durationSeconds", 45, 3);
    private final int mismatches = settings.integer("mismatches", 5, 3);

    private ChainBuilder paced(ChainBuilder chain) {
        return settings.pause().isZero() ? chain : chain.pause(settings.pause());
    }

    {
        ChainBuilder firstWrite = paced(UniqueKeysSimulation.firstWrite(settings, "first write"));
        ChainBuilder changedPayload = paced(exec(http("same key, changed payload").post(settings.path)
                .header(KEY_HEADER, "#{key}")
                .body(StringBody(session ->
                        MerchantPayloads.changedJson(session.getString("key"), session.getInt("variant"))))
                .check(status().is(409).name("changed payload answered 409"))
                .check(jsonPath("$.status.message").is(MISMATCH_MESSAGE).name("409 says the payload differs"))
                .check(jsonPath("$.status.reason").ofInt().is(409).name("envelope reason 409"))
                .check(header(REPLAYED_HEADER).notExists().name("a mismatch is not a replay"))));
        ChainBuilder originalAgain = paced(exec(http("same key, original payload again").post(settings.path)
                .header(KEY_HEADER, "#{key}")
                .body(StringBody(session -> MerchantPayloads.json(session.getString("key"))))
                .check(status().is(200).name("original payload still replayed"))
                .check(header(REPLAYED_HEADER).is("true").name("replay flagged Idempotency-Replayed"))));

        ScenarioBuilder mismatch = scenario("Key reused with another payload").exec(during(duration).on(
                firstWrite,
                repeat(mismatches, "variant").on(changedPayload),
                originalAgain));

        System.out.println(settings.describe("MismatchSimulation", users + " users, " + mismatches
                + " changed payloads per key, " + duration.toSeconds() + " s"));
        setUp(mismatch.injectOpen(rampUsers(users).during(ramp)))
                .protocols(settings.protocol())
                .assertions(
                        global().allRequests().count().gt(0L),
                        global().failedRequests().count().is(0L),
                        global().responseTime().percentile(99.0).lt(settings.maxP99Millis()));
    }
}
