package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.LoadSettings.KEY_HEADER;
import static dev.retrysafe.loadtests.gatling.LoadSettings.REPLAYED_HEADER;
import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.bodyString;
import static io.gatling.javaapi.core.CoreDsl.doIfOrElse;
import static io.gatling.javaapi.core.CoreDsl.during;
import static io.gatling.javaapi.core.CoreDsl.exec;
import static io.gatling.javaapi.core.CoreDsl.global;
import static io.gatling.javaapi.core.CoreDsl.rampUsers;
import static io.gatling.javaapi.core.CoreDsl.repeat;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.header;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

import io.gatling.javaapi.core.ChainBuilder;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Session;
import io.gatling.javaapi.core.Simulation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Replay-heavy traffic, the common case in front of clients that retry: 9 of every 10 requests resend a key this
 * client already wrote, with the same payload (written differently: other key order and whitespace, and with
 * {@code -DshuffleUnorderedArrays=true} the integrations/paymentMethods/sites arrays reversed, for a route configured
 * with those {@code unordered-arrays}); 1 of 10 is a new key.
 *
 * <p>A first write must answer 2xx; a replay must answer 200 with {@code Idempotency-Replayed: true} and the very body
 * of the first answer (same processId).
 *
 * <p>Closed model: {@code users} virtual users (default 50; smoke 2), ramped up over {@code rampSeconds} (default 10;
 * smoke 1); each first writes {@code poolSize} keys (default 5; smoke 2), then loops for {@code durationSeconds}
 * (default 45; smoke 3) with {@code pauseMillis} between requests.
 */
public class ReplayHeavySimulation extends Simulation {

    private static final String POOL = "pool";        // List<String>: this user's keys, first written successfully
    private static final String BODIES = "bodies";    // Map<String, String>: key -> body of its first answer

    private final LoadSettings settings = LoadSettings.load();
    private final int users = settings.integer("users", 50, 2);
    private final Duration ramp = settings.seconds("rampSeconds", 10, 1);
    private final Duration duration = settings.seconds("durationSeconds", 45, 3);
    private final int poolSize = settings.integer("poolSize", 5, 2);
    private final boolean shuffleArrays = Boolean.getBoolean("shuffleUnorderedArrays");

    private ChainBuilder newKey(String requestName) {
        return exec(session -> session.set("key", MerchantPayloads.newKey()))
                .exec(http(requestName).post(settings.path)
                        .header(KEY_HEADER, "#{key}")
                        .body(StringBody(session -> MerchantPayloads.json(session.getString("key"))))
                        .check(status().saveAs("status"))
                        .check(status().transform(code -> code / 100 == 2 ? "2xx" : String.valueOf(code))
                                .is("2xx").name("first write answered 2xx"))
                        .check(header(REPLAYED_HEADER).notExists().name("first write is not a replay"))
                        .check(bodyString().saveAs("firstBody")))
                .exec(ReplayHeavySimulation::remember);
    }

    /** Only a key whose first write succeeded joins the pool of keys to replay. */
    private static Session remember(Session session) {
        if (session.contains("status") && session.getInt("status") / 100 == 2 && session.contains("firstBody")) {
            String key = session.getString("key");
            session.<String>getList(POOL).add(key);
            Map<String, String> bodies = session.getMap(BODIES);
            bodies.put(key, session.getString("firstBody"));
        }
        return session.removeAll("status", "firstBody");
    }

    private ChainBuilder replay() {
        return exec(session -> {
            List<String> pool = session.getList(POOL);
            return session.set("key", pool.get(ThreadLocalRandom.current().nextInt(pool.size())));
        }).exec(http("replay (same key, same payload)").post(settings.path)
                .header(KEY_HEADER, "#{key}")
                .body(StringBody(session -> MerchantPayloads.replayJson(session.getString("key"), shuffleArrays)))
                .check(status().is(200).name("replay answered 200"))
                .check(header(REPLAYED_HEADER).is("true").name("replay flagged Idempotency-Replayed"))
                .check(bodyString().is(session -> session.<String>getMap(BODIES).get(session.getString("key")))
                        .name("replay body identical to the first answer")));
    }

    {
        ChainBuilder step = doIfOrElse(
                session -> session.getInt("step") % 10 == 9 || session.<String>getList(POOL).isEmpty())
                .then(newKey("new key"))
                .orElse(replay());
        if (!settings.pause().isZero()) {
            step = step.pause(settings.pause());
        }
        ScenarioBuilder replayHeavy = scenario("Replay heavy")
                .exec(session -> session.set(POOL, new ArrayList<String>()).set(BODIES, new HashMap<String, String>()))
                .exec(repeat(poolSize).on(newKey("first write (pool)")))
                .exec(during(duration, "step").on(step));

        System.out.println(settings.describe("ReplayHeavySimulation", users + " users, pool of " + poolSize
                + " keys each, then 90% replays for " + duration.toSeconds() + " s"
                + (shuffleArrays ? ", unordered arrays reversed in replays" : "")));
        setUp(replayHeavy.injectOpen(rampUsers(users).during(ramp)))
                .protocols(settings.protocol())
                .assertions(
                        global().allRequests().count().gt(0L),
                        global().failedRequests().count().is(0L),
                        global().responseTime().percentile(99.0).lt(settings.maxP99Millis()));
    }
}
