package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.LoadSettings.KEY_HEADER;
import static dev.retrysafe.loadtests.gatling.LoadSettings.REPLAYED_HEADER;
import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.atOnceUsers;
import static io.gatling.javaapi.core.CoreDsl.exec;
import static io.gatling.javaapi.core.CoreDsl.global;
import static io.gatling.javaapi.core.CoreDsl.nothingFor;
import static io.gatling.javaapi.core.CoreDsl.repeat;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.header;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

import io.gatling.javaapi.core.OpenInjectionStep;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Session;
import io.gatling.javaapi.core.Simulation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A retry storm: many clients resend the same few keys with the same payload at the same moment. Each answer must be
 * the first write (202), a replay (200 with {@code Idempotency-Replayed: true}) or "still in flight" (409 with
 * {@code Retry-After}); and the invariant of the whole gateway: <b>each key produced exactly one 202</b>, i.e. the
 * backend acted once per key however many copies arrived.
 *
 * <p>The invariant is enforced per response (a second 202 for a key turns that request KO, which the
 * {@code failedRequests().count().is(0)} assertion catches) and once more at the end (every key exactly one 202; the
 * counts are printed).
 *
 * <p>Sizing: {@code keys} keys per storm (default 20; smoke 3) x {@code usersPerKey} users each (default 25;
 * smoke 4), all started at once, each user sending its key {@code minSends}..{@code maxSends} times (default 3..5;
 * smoke 2..3) {@code retryPauseMillis} apart (default 0..250 ms random). A new storm with fresh keys every
 * {@code stormIntervalSeconds} (default 5) for {@code durationSeconds} (default 40; smoke: a single storm).
 */
public class RetryStormSimulation extends Simulation {

    private final LoadSettings settings = LoadSettings.load();
    private final int keys = settings.integer("keys", 20, 3);
    private final int usersPerKey = settings.integer("usersPerKey", 25, 4);
    private final int minSends = settings.integer("minSends", 3, 2);
    private final int maxSends = Math.max(minSends, settings.integer("maxSends", 5, 3));
    private final int retryPauseMillis = settings.integer("retryPauseMillis", 250, 100);
    private final int stormIntervalSeconds = settings.integer("stormIntervalSeconds", 5, 5);
    private final int storms =
            Math.max(1, settings.integer("durationSeconds", 40, 1) / Math.max(1, stormIntervalSeconds));

    /** The 202s seen per key, shared by all virtual users of this run. */
    private final ConcurrentHashMap<String, Integer> firstWrites = new ConcurrentHashMap<>();
    /** All answers by status, for the summary printed at the end. */
    private final ConcurrentHashMap<Integer, Integer> answers = new ConcurrentHashMap<>();
    private final String runId = UUID.randomUUID().toString().replace("-", "").substring(0, 20);
    private final AtomicLong userSequence = new AtomicLong();

    /** Users are numbered in start order: user n of a storm resends key n % keys of that storm. */
    private String assignKey() {
        long n = userSequence.getAndIncrement();
        long storm = n / ((long) keys * usersPerKey);
        String key = "storm-" + runId + "-" + storm + "-" + (n % keys);
        firstWrites.putIfAbsent(key, 0);
        return key;
    }

    /** Counts the 202s; the second one for a key is reported as a status that fails the check. */
    private String classify(Integer code, Session session) {
        answers.merge(code, 1, Integer::sum);
        if (code == 202) {
            int seen = firstWrites.merge(session.getString("key"), 1, Integer::sum);
            // One constant text, so that Gatling's error summary counts all duplicates on one line.
            return seen == 1 ? "202" : "202 AGAIN for a key already executed";
        }
        return String.valueOf(code);
    }

    {
        ScenarioBuilder storm = scenario("Retry storm")
                .exec(session -> session.set("key", assignKey())
                        .set("sends", ThreadLocalRandom.current().nextInt(minSends, maxSends + 1)))
                .exec(repeat("#{sends}").on(
                        exec(http("resend same key and payload").post(settings.path)
                                .header(KEY_HEADER, "#{key}")
                                .body(StringBody(session -> MerchantPayloads.json(session.getString("key"))))
                                .check(status().transformWithSession(this::classify).in("202", "200", "409")
                                        .name("202 once per key, else 200 replay or 409 in flight"))
                                .checkIf((response, session) -> response.status().code() == 200)
                                .then(header(REPLAYED_HEADER).is("true").name("200 is a replay"))
                                .checkIf((response, session) -> response.status().code() == 409)
                                .then(header("Retry-After").exists().name("409 carries Retry-After")))
                        .pause(Duration.ZERO, Duration.ofMillis(retryPauseMillis))));

        List<OpenInjectionStep> injection = new ArrayList<>();
        for (int i = 0; i < storms; i++) {
            if (i > 0) {
                injection.add(nothingFor(Duration.ofSeconds(stormIntervalSeconds)));
            }
            injection.add(atOnceUsers(keys * usersPerKey));
        }

        System.out.println(settings.describe("RetryStormSimulation", storms + " storm(s) of " + keys + " keys x "
                + usersPerKey + " users, " + minSends + ".." + maxSends + " sends each"));
        setUp(storm.injectOpen(injection))
                .protocols(settings.protocol())
                .assertions(
                        global().allRequests().count().gt(0L),
                        global().failedRequests().count().is(0L),
                        global().responseTime().percentile(99.0).lt(settings.maxP99Millis()));
    }

    @Override
    public void before() {
        firstWrites.clear();
        answers.clear();
    }

    /**
     * The end-of-run check of the invariant: every key exactly one 202. A key with several 202s has already turned
     * requests KO (the {@code failedRequests} assertion fails the run, with its report); a key without any 202
     * cannot show in a single response, so it crashes the run here.
     */
    @Override
    public void after() {
        Map<String, Integer> counts = new TreeMap<>(firstWrites);
        List<String> duplicated = counts.entrySet().stream().filter(e -> e.getValue() > 1)
                .map(e -> e.getKey() + "=" + e.getValue()).toList();
        List<String> neverWritten = counts.entrySet().stream().filter(e -> e.getValue() < 1)
                .map(Map.Entry::getKey).toList();
        long expectedKeys = (long) storms * keys;

        System.out.println("RetryStormSimulation: answers by status " + new TreeMap<>(answers)
                + " (202 first write, 200 replay, 409 still in flight)");
        System.out.println("RetryStormSimulation: 202s per key (" + counts.size() + " keys, expected exactly 1 each):");
        if (counts.size() <= 60) {
            counts.forEach((key, n) -> System.out.println("  " + key + " -> " + n));
        } else {
            System.out.println("  " + (counts.size() - duplicated.size() - neverWritten.size())
                    + " keys with exactly one 202");
        }
        if (!duplicated.isEmpty()) {
            System.out.println("RetryStormSimulation: INVARIANT BROKEN, keys executed more than once (their extra 202s"
                    + " are KO requests): " + duplicated);
        }
        if (!neverWritten.isEmpty() || counts.size() != expectedKeys) {
            throw new IllegalStateException("Idempotency invariant broken: expected " + expectedKeys
                    + " keys with exactly one 202 each, got " + counts.size() + " keys; keys without any 202: "
                    + neverWritten);
        }
        if (duplicated.isEmpty()) {
            System.out.println("RetryStormSimulation: invariant holds, each of the " + counts.size()
                    + " keys produced exactly one 202");
        }
    }
}
