package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.ONE_FIRST_WRITE_PER_KEY;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.KEY;
import static dev.retrysafe.loadtests.gatling.LoadSettings.KEY_HEADER;
import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.during;
import static io.gatling.javaapi.core.CoreDsl.exec;
import static io.gatling.javaapi.core.CoreDsl.rampUsers;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;

import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Sent;
import io.gatling.javaapi.core.ChainBuilder;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import java.time.Duration;

/**
 * Every request is a first write with a fresh key: the gateway's most expensive path (reserve in Redis, forward,
 * store the response). Each answer must be the upstream's 2xx (the sample backend answers 202), never a replay;
 * the verdict's invariant: one 202 per key.
 *
 * <p>Closed model: {@code users} virtual users, ramped up over {@code rampSeconds}, each sending writes one after
 * the other, {@code pauseMillis} apart, for {@code durationSeconds}; so at most users x 1000 / pauseMillis requests
 * per second. Per profile (laptop / ci / soak / smoke): users 10 / 4 / 10 / 2, ramp 5 / 2 / 10 / 1 s, duration
 * 30 / 10 / 1800 / 3 s, pause 50 / 50 / 200 / 50 ms.
 */
public class UniqueKeysSimulation extends Simulation {

    private final LoadSettings settings = LoadSettings.load();
    //                                                           laptop  ci  soak  smoke
    private final int users = settings.integer("users",              10,  4,   10,    2);
    private final Duration ramp = settings.seconds("rampSeconds",      5,  2,   10,    1);
    private final Duration duration = settings.seconds("durationSeconds", 30, 10, 1800, 3);
    private final int pauseMillis = settings.integer("pauseMillis",   50, 50,  200,   50);
    private final IdempotencyVerdict verdict =
            IdempotencyVerdict.of("UniqueKeysSimulation", settings, ONE_FIRST_WRITE_PER_KEY);

    /** A fresh key in the session's {@code key}, and its first write. */
    static ChainBuilder firstWrite(LoadSettings settings, IdempotencyVerdict verdict, String requestName) {
        return exec(session -> session.set(KEY, MerchantPayloads.newKey()))
                .exec(verdict.exchange(Sent.NEW_KEY, http(requestName).post(settings.target())
                        .header(KEY_HEADER, "#{key}")
                        .body(StringBody(session -> MerchantPayloads.json(session.getString(KEY))))));
    }

    {
        ChainBuilder loop = firstWrite(settings, verdict, "first write (unique key)");
        if (pauseMillis > 0) {
            loop = loop.pause(Duration.ofMillis(pauseMillis));
        }
        ScenarioBuilder uniqueKeys = scenario("Unique keys").exec(during(duration).on(loop));

        System.out.println(settings.describe("UniqueKeysSimulation", users + " users, ramp " + ramp.toSeconds()
                + " s, " + duration.toSeconds() + " s each, " + pauseMillis + " ms between writes"));
        setUp(verdict.followedByVerdict(uniqueKeys.injectOpen(rampUsers(users).during(ramp))))
                .protocols(settings.protocol())
                .assertions(verdict.assertions());
    }

    @Override
    public void after() {
        verdict.print();
    }
}
