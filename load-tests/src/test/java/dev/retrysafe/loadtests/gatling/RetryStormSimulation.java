package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Invariant.ONE_FIRST_WRITE_PER_KEY;
import static dev.retrysafe.loadtests.gatling.IdempotencyVerdict.KEY;
import static dev.retrysafe.loadtests.gatling.LoadSettings.KEY_HEADER;
import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.atOnceUsers;
import static io.gatling.javaapi.core.CoreDsl.nothingFor;
import static io.gatling.javaapi.core.CoreDsl.repeat;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;

import dev.retrysafe.loadtests.gatling.IdempotencyVerdict.Sent;
import io.gatling.javaapi.core.OpenInjectionStep;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A retry storm: many clients resend the same few keys with the same payload at the same moment. Each answer must be
 * the first write (202), a replay (200 with {@code Idempotency-Replayed: true}) or "still in flight" (409 with
 * {@code Retry-After}); and the invariant of the whole gateway: <b>each key produced exactly one 202</b>, i.e. the
 * backend acted once per key however many copies arrived. A second 202 for a key turns that request KO at once; the
 * verdict at the end counts the 202s of every key (see {@link IdempotencyVerdict}).
 *
 * <p>Sizing: {@code keys} keys per storm x {@code usersPerKey} users each, all started at once, each user sending its
 * key {@code minSends}..{@code maxSends} times, 0..{@code retryPauseMillis} apart. A new storm with fresh keys every
 * {@code stormIntervalSeconds} for {@code durationSeconds}. Per profile (laptop / ci / soak / smoke): keys 10 / 5 / 10
 * / 3, usersPerKey 10 / 5 / 10 / 4, sends 2..4 / 2..3 / 2..4 / 2..3, retryPauseMillis 250 / 250 / 250 / 100, a storm
 * every 5 / 5 / 10 / 5 s for 30 / 10 / 1800 / 1 s (6 / 2 / 180 / 1 storms). With {@code -DkeysFile=} the keys
 * sent are written there at the end, one per line (load-tests/rolling-restart.sh checks them against the upstream).
 */
public class RetryStormSimulation extends Simulation {

    private final LoadSettings settings = LoadSettings.load();
    //                                                                          laptop  ci  soak  smoke
    private final int keys = settings.integer("keys",                              10,   5,   10,    3);
    private final int usersPerKey = settings.integer("usersPerKey",                10,   5,   10,    4);
    private final int minSends = settings.integer("minSends",                       2,   2,    2,    2);
    private final int maxSends = Math.max(minSends, settings.integer("maxSends",    4,   3,    4,    3));
    private final int retryPauseMillis = settings.integer("retryPauseMillis",     250, 250,  250,  100);
    private final int stormIntervalSeconds = settings.integer("stormIntervalSeconds", 5, 5,   10,    5);
    private final int storms = Math.max(1,
            settings.integer("durationSeconds",                                    30,  10, 1800,    1)
                    / Math.max(1, stormIntervalSeconds));
    private final IdempotencyVerdict verdict =
            IdempotencyVerdict.of("RetryStormSimulation", settings, ONE_FIRST_WRITE_PER_KEY);

    private final String runId = UUID.randomUUID().toString().replace("-", "").substring(0, 20);
    private final AtomicLong userSequence = new AtomicLong();
    /** Every key some user sent, written to {@code -DkeysFile=} at the end for checks against the upstream's log. */
    private final Set<String> sentKeys = ConcurrentHashMap.newKeySet();

    /** Users are numbered in start order: user n of a storm resends key n % keys of that storm. */
    private String assignKey() {
        long n = userSequence.getAndIncrement();
        long storm = n / ((long) keys * usersPerKey);
        String key = "storm-" + runId + "-" + storm + "-" + (n % keys);
        sentKeys.add(key);
        return key;
    }

    {
        ScenarioBuilder storm = scenario("Retry storm")
                .exec(session -> session.set(KEY, assignKey())
                        .set("sends", ThreadLocalRandom.current().nextInt(minSends, maxSends + 1)))
                .exec(repeat("#{sends}").on(
                        verdict.exchange(Sent.CONCURRENT_RESEND, http("resend same key and payload").post(settings.target())
                                        .header(KEY_HEADER, "#{key}")
                                        .body(StringBody(session -> MerchantPayloads.json(session.getString(KEY)))))
                                .pause(Duration.ZERO, Duration.ofMillis(retryPauseMillis))));

        List<OpenInjectionStep> injection = new ArrayList<>();
        for (int i = 0; i < storms; i++) {
            if (i > 0) {
                injection.add(nothingFor(Duration.ofSeconds(stormIntervalSeconds)));
            }
            injection.add(atOnceUsers(keys * usersPerKey));
        }

        System.out.println(settings.describe("RetryStormSimulation", storms + " storm(s) of " + keys + " keys x "
                + usersPerKey + " users, " + minSends + ".." + maxSends + " sends each, a storm every "
                + stormIntervalSeconds + " s"));
        setUp(verdict.followedByVerdict(storm.injectOpen(injection)))
                .protocols(settings.protocol())
                .assertions(verdict.assertions());
    }

    @Override
    public void after() {
        verdict.print();
        settings.file("keysFile").ifPresent(file -> {
            try {
                Files.write(file, new TreeSet<>(sentKeys));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write -DkeysFile=" + file, e);
            }
        });
    }
}
