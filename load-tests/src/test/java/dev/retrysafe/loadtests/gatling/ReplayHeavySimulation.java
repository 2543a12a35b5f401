package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.FIRST_BODY;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.IDENTICAL_REPLAYS;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.ONE_FIRST_WRITE_PER_KEY;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.KEY;
import static dev.retrysafe.loadtests.gatling.LoadSettings.KEY_HEADER;
import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.doIfOrElse;
import static io.gatling.javaapi.core.CoreDsl.during;
import static io.gatling.javaapi.core.CoreDsl.exec;
import static io.gatling.javaapi.core.CoreDsl.rampUsers;
import static io.gatling.javaapi.core.CoreDsl.repeat;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;

import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Sent;
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
 * <p>A first write must answer 2xx; a replay must answer with {@code Idempotency-Replayed: true} and the very body
 * of the first answer for its key (same processId): the verdict's invariants are byte-identical replays and one 202
 * per key.
 *
 * <p>Closed model: {@code users} virtual users, ramped up over {@code rampSeconds}; each first writes
 * {@code poolSize} keys, then loops for {@code durationSeconds} with {@code pauseMillis} between requests. Per profile
 * (laptop / ci / soak / smoke): users 10 / 4 / 10 / 2, ramp 5 / 2 / 10 / 1 s, poolSize 5 / 3 / 20 / 2, duration
 * 30 / 10 / 1800 / 3 s, pause 50 / 50 / 200 / 50 ms.
 */
public class ReplayHeavySimulation extends Simulation {

    private static final String POOL = "pool";        // List<String>: this user's keys, first written successfully
    private static final String BODIES = "bodies";    // Map<String, String>: key -> body of its first answer

    private final LoadSettings settings = LoadSettings.load();
    //                                                              laptop  ci  soak  smoke
    private final int users = settings.integer("users",                 10,  4,   10,    2);
    private final Duration ramp = settings.seconds("rampSeconds",         5,  2,   10,    1);
    private final int poolSize = settings.integer("poolSize",             5,  3,   20,    2);
    private final Duration duration = settings.seconds("durationSeconds", 30, 10, 1800,    3);
    private final int pauseMillis = settings.integer("pauseMillis",      50, 50,  200,   50);
    private final boolean shuffleArrays = Boolean.getBoolean("shuffleUnorderedArrays");
    private final IdempotencyVerdict verdict = IdempotencyVerdict.of("ReplayHeavySimulation", settings,
            ONE_FIRST_WRITE_PER_KEY, IDENTICAL_REPLAYS);

    private ChainBuilder newKey(String requestName) {
        return exec(session -> session.set(KEY, MerchantPayloads.newKey()))
                .exec(verdict.exchange(Sent.NEW_KEY, http(requestName).post(settings.target())
                        .header(KEY_HEADER, "#{key}")
                        .body(StringBody(session -> MerchantPayloads.json(session.getString(KEY))))))
                .exec(ReplayHeavySimulation::remember);
    }

    /** Only a key whose first write succeeded joins the pool of keys to replay. */
    private static Session remember(Session session) {
        if (IdempotencyVerdict.answeredAsAgreed(session) && session.contains(FIRST_BODY)) {
            String key = session.getString(KEY);
            session.<String>getList(POOL).add(key);
            Map<String, String> bodies = session.getMap(BODIES);
            bodies.put(key, session.getString(FIRST_BODY));
        }
        return session;
    }

    private ChainBuilder replay() {
        return exec(session -> {
            List<String> pool = session.getList(POOL);
            return session.set(KEY, pool.get(ThreadLocalRandom.current().nextInt(pool.size())));
        }).exec(verdict.exchange(Sent.REPLAY, http("replay (same key, same payload)").post(settings.target())
                        .header(KEY_HEADER, "#{key}")
                        .body(StringBody(session -> MerchantPayloads.replayJson(session.getString(KEY), shuffleArrays))),
                session -> session.<String>getMap(BODIES).get(session.getString(KEY))));
    }

    {
        ChainBuilder step = doIfOrElse(
                session -> session.getInt("step") % 10 == 9 || session.<String>getList(POOL).isEmpty())
                .then(newKey("new key"))
                .orElse(replay());
        if (pauseMillis > 0) {
            step = step.pause(Duration.ofMillis(pauseMillis));
        }
        ScenarioBuilder replayHeavy = scenario("Replay heavy")
                .exec(session -> session.set(POOL, new ArrayList<String>()).set(BODIES, new HashMap<String, String>()))
                .exec(repeat(poolSize).on(newKey("first write (pool)")))
                .exec(during(duration, "step").on(step));

        System.out.println(settings.describe("ReplayHeavySimulation", users + " users, pool of " + poolSize
                + " keys each, then 90% replays for " + duration.toSeconds() + " s, " + pauseMillis
                + " ms between requests" + (shuffleArrays ? ", unordered arrays reversed in replays" : "")));
        setUp(verdict.followedByVerdict(replayHeavy.injectOpen(rampUsers(users).during(ramp))))
                .protocols(settings.protocol())
                .assertions(verdict.assertions());
    }

    @Override
    public void after() {
        verdict.print();
    }
}
