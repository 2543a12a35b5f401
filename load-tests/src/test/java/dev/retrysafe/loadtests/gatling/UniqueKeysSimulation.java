package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.LoadSettings.KEY_HEADER;
import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.during;
import static io.gatling.javaapi.core.CoreDsl.exec;
import static io.gatling.javaapi.core.CoreDsl.global;
import static io.gatling.javaapi.core.CoreDsl.rampUsers;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.header;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

import io.gatling.javaapi.core.ChainBuilder;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import java.time.Duration;

/**
 * Every request is a first write with a fresh key: the gateway's most expensive path (reserve in Redis, forward,
 * store the response). Expects the upstream's 2xx (the sample backend answers 202), never a replay.
 *
 * <p>Closed model: {@code users} virtual users (default 50; smoke 2), ramped up over {@code rampSeconds} (default 10;
 * smoke 1), each sending writes back to back (plus {@code pauseMillis}) for {@code durationSeconds} (default 45;
 * smoke 3).
 */
public class UniqueKeysSimulation extends Simulation {

    private final LoadSettings settings = LoadSettings.load();
    private final int users = settings.integer("users", 50, 2);
    private final Duration ramp = settings.seconds("rampSeconds", 10, 1);
    private final Duration duration = settings.seconds("durationSeconds", 45, 3);

    static ChainBuilder firstWrite(LoadSettings settings, String requestName) {
        return exec(session -> session.set("key", MerchantPayloads.newKey()))
                .exec(http(requestName).post(settings.path)
                        .header(KEY_HEADER, "#{key}")
                        .body(StringBody(session -> MerchantPayloads.json(session.getString("key"))))
                        .check(status().transform(code -> code / 100 == 2 ? "2xx" : String.valueOf(code))
                                .is("2xx").name("first write answered 2xx"))
                        .check(header(LoadSettings.REPLAYED_HEADER).notExists().name("first write is not a replay")));
    }

    {
        ChainBuilder loop = firstWrite(settings, "first write (unique key)");
        if (!settings.pause().isZero()) {
            loop = loop.pause(settings.pause());
        }
        ScenarioBuilder uniqueKeys = scenario("Unique keys").exec(during(duration).on(loop));

        System.out.println(settings.describe("UniqueKeysSimulation",
                users + " users, ramp " + ramp.toSeconds() + " s, " + duration.toSeconds() + " s each"));
        setUp(uniqueKeys.injectOpen(rampUsers(users).during(ramp)))
                .protocols(settings.protocol())
                .assertions(
                        global().allRequests().count().gt(0L),
                        global().failedRequests().count().is(0L),
                        global().responseTime().percentile(99.0).lt(settings.maxP99Millis()));
    }
}
