package dev.retrysafe.loadtests.gatling;

import static dev.retrysafe.loadtests.gatling.LoadSettings.MISMATCH_MESSAGE;
import static dev.retrysafe.loadtests.gatling.LoadSettings.REPLAYED_HEADER;
import static dev.retrysafe.loadtests.gatling.LoadSettings.RETRY_AFTER_HEADER;
import static io.gatling.javaapi.core.CoreDsl.atOnceUsers;
import static io.gatling.javaapi.core.CoreDsl.bodyString;
import static io.gatling.javaapi.core.CoreDsl.details;
import static io.gatling.javaapi.core.CoreDsl.dummy;
import static io.gatling.javaapi.core.CoreDsl.exec;
import static io.gatling.javaapi.core.CoreDsl.global;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.header;
import static io.gatling.javaapi.http.HttpDsl.status;

import io.gatling.javaapi.core.Assertion;
import io.gatling.javaapi.core.ChainBuilder;
import io.gatling.javaapi.core.CheckBuilder;
import io.gatling.javaapi.core.PopulationBuilder;
import io.gatling.javaapi.core.Session;
import io.gatling.javaapi.http.HttpRequestActionBuilder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The idempotency verdict of one run, kept apart from its latency: every answer is counted by what it is (first
 * write, replay, 409 by reason, 503, another status) and judged against what the request was (a new key, a
 * concurrent resend, a replay, a changed payload); at the end each invariant of the scenario either held, is BROKEN,
 * or was not shown (nothing answered that could show it).
 *
 * <p>Pass/fail, as Gatling sees it: after the load, one extra scenario ("Idempotency verdict") records one
 * pseudo-request per gate (Gatling's {@code dummy}), OK when the gate passed, and the run asserts each of them:
 * <ul>
 *   <li>each invariant held (BROKEN and "not shown" fail the run);</li>
 *   <li>no answer outside the contract (e.g. a 500, a 409 in flight without Retry-After): not an invariant break,
 *       but nothing the scenario allows;</li>
 *   <li>only with {@code -DmaxUnavailablePercent=N}: at most N% of the requests not served. Not served: a 503
 *       ("the store is slower than store-timeout": an overloaded machine), a 409 that safely refuses a same-payload
 *       request to retry later (in flight for a key whose first answer could not be stored, outcome uncertain:
 *       nothing executed twice) and no answer at all. Without it they are counted and printed, never a failure;</li>
 *   <li>only with {@code -DmaxP99Millis=N}: Gatling's 99th percentile of all requests below N ms.</li>
 * </ul>
 * So the HTML report is written even when an invariant breaks, and its table shows the gates. The counts are printed
 * by {@link #print()} from the simulation's {@code after()}, just before Gatling's own table.
 *
 * <p>All counters are thread-safe: Gatling's checks call {@link #answered} from many threads at once.
 */
public final class IdempotencyVerdict {

    /** What a request is; it decides which answers the contract allows. */
    public enum Sent {
        /** A key never sent before: the answer is a first write (2xx, not a replay). */
        NEW_KEY,
        /** The same key and payload sent by many clients at once: one first write, else replays or 409 in flight. */
        CONCURRENT_RESEND,
        /** The same key and payload after its first write was answered: a replay, byte for byte that answer. */
        REPLAY,
        /** The same key with another payload: 409 with the mismatch message, the upstream not called. */
        CHANGED_PAYLOAD
    }

    /** What an answer is, from its status, its {@code Idempotency-Replayed} header and its message. */
    public enum Answer {
        FIRST_WRITE("first writes (2xx, not a replay)"),
        REPLAY("replays (Idempotency-Replayed: true)"),
        IN_FLIGHT("409 in flight (Retry-After)"),
        MISMATCH("409 payload mismatch (the contract's message)"),
        UNCERTAIN("409 outcome uncertain"),
        CONFLICT_OTHER("409 other"),
        UNAVAILABLE("503 store unavailable (overload, not an invariant break)"),
        OTHER("other statuses");

        final String label;

        Answer(String label) {
            this.label = label;
        }
    }

    public enum Invariant {
        /** No key is executed twice: at most one 2xx first write per key, and a key answered at all had one. */
        ONE_FIRST_WRITE_PER_KEY("one 202 per key"),
        /** A replay carries exactly the bytes of the first answer for its key. */
        IDENTICAL_REPLAYS("byte-identical replays"),
        /** A changed payload under a used key is answered 409 with the mismatch message, never executed. */
        EVERY_MISMATCH_409("every mismatch a 409");

        public final String label;

        Invariant(String label) {
            this.label = label;
        }
    }

    public enum Status {
        HELD("held"), BROKEN("BROKEN"), NOT_SHOWN("NOT SHOWN");

        public final String label;

        Status(String label) {
            this.label = label;
        }
    }

    /** The text the per-request check expects; any other text turns that request KO, with the text as its error. */
    public static final String AS_AGREED = "an answer the contract allows";
    static final String IN_FLIGHT_MESSAGE = "A request with this idempotency key is still being processed";
    static final String UNCERTAIN_MESSAGE = "The outcome of the original request with this idempotency key is unknown";
    static final String OVERLOAD = "503 store unavailable (overload: not processed, not an invariant break)";
    static final String NOT_STORED = "409 in flight for a key already answered (its answer not stored: not served,"
            + " not an invariant break)";
    static final String NOT_RESENT = "409 outcome uncertain (not resent: not served, not an invariant break)";
    static final String CONTRACT_GATE = "answers within the contract";
    static final String NOT_SERVED = "not served (503, 409 refusals, no answer)";
    static final String INVARIANT_GATE = "invariant held: ";
    private static final String BROKEN = "INVARIANT BROKEN";

    /** Session attributes; {@value #KEY} is the idempotency key of the request, set by the scenario. */
    public static final String KEY = "key";
    public static final String FIRST_BODY = "verdict.firstBody";
    private static final String STATUS = "verdict.status";
    private static final String REPLAYED = "verdict.replayed";
    private static final String RETRY_AFTER = "verdict.retryAfter";
    private static final String OUTCOME = "verdict.outcome";

    private static final Pattern MESSAGE = Pattern.compile("\"message\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
    private static final int SAMPLES = 5;

    private final String simulation;
    private final String profile;
    private final Set<Invariant> invariants;
    private final OptionalDouble maxUnavailablePercent;
    private final OptionalInt maxP99Millis;

    private final ConcurrentHashMap<String, KeyTally> keys = new ConcurrentHashMap<>();
    private final LongAdder sent = new LongAdder();
    private final LongAdder answered = new LongAdder();
    private final Map<Answer, LongAdder> byAnswer = new EnumMap<>(Answer.class);
    private final ConcurrentHashMap<Integer, LongAdder> otherStatuses = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, LongAdder> unexpected = new ConcurrentHashMap<>();
    /** 409s that safely refused a same-payload request (first answer not stored yet, outcome uncertain). */
    private final LongAdder refused409 = new LongAdder();
    private final LongAdder identicalReplays = new LongAdder();
    private final LongAdder differentReplays = new LongAdder();
    private final LongAdder mismatchesAs409 = new LongAdder();
    private final LongAdder mismatchesOtherwise = new LongAdder();
    private final Map<Invariant, Samples> brokenSamples = new EnumMap<>(Invariant.class);
    private volatile Conclusion conclusion;

    public IdempotencyVerdict(String simulation, String profile, OptionalDouble maxUnavailablePercent,
            OptionalInt maxP99Millis, Set<Invariant> invariants) {
        if (invariants.isEmpty()) {
            throw new IllegalArgumentException("a verdict needs at least one invariant");
        }
        this.simulation = simulation;
        this.profile = profile;
        this.maxUnavailablePercent = maxUnavailablePercent;
        this.maxP99Millis = maxP99Millis;
        this.invariants = Collections.unmodifiableSet(EnumSet.copyOf(invariants));
        for (Answer answer : Answer.values()) {
            byAnswer.put(answer, new LongAdder());
        }
        for (Invariant invariant : Invariant.values()) {
            brokenSamples.put(invariant, new Samples());
        }
    }

    public static IdempotencyVerdict of(String simulation, LoadSettings settings, Invariant first,
            Invariant... more) {
        return new IdempotencyVerdict(simulation, settings.profile.label(), settings.maxUnavailablePercent(),
                settings.maxP99Millis(), EnumSet.of(first, more));
    }

    // ---- counting (thread-safe; called from Gatling's session hooks and checks) ----

    /** A request for {@code key} is about to be sent. */
    public void sending(String key) {
        sent.increment();
        tally(key).sent.incrementAndGet();
    }

    /**
     * One answer: counts it and judges it against what was sent. {@code expectedBody}, when not null, is the body
     * of the first answer for this key, which a replay must repeat byte for byte.
     *
     * @return {@link #AS_AGREED}, or why this answer is not one the contract allows (the request's Gatling error)
     */
    public String answered(Sent what, String key, int status, boolean replayed, boolean retryAfter, String body,
            String expectedBody) {
        Answer answer = classify(status, replayed, body);
        answered.increment();
        byAnswer.get(answer).increment();
        KeyTally tally = tally(key);
        tally.answered.incrementAndGet();
        if (answer == Answer.OTHER) {
            otherStatuses.computeIfAbsent(status, s -> new LongAdder()).increment();
        }
        String outcome = judge(what, answer, key, tally, status, retryAfter, body, expectedBody);
        boolean refused = outcome.equals(OVERLOAD) || outcome.equals(NOT_STORED) || outcome.equals(NOT_RESENT);
        if (outcome.equals(NOT_STORED) || outcome.equals(NOT_RESENT)) {
            refused409.increment();
        }
        boolean outsideContract = !refused && !outcome.equals(AS_AGREED) && !outcome.startsWith(BROKEN);
        if (outsideContract) {
            unexpected.computeIfAbsent(outcome, o -> new LongAdder()).increment();
        }
        if (refused || outsideContract) {
            tally.notServed.incrementAndGet();
        }
        return outcome;
    }

    /** What an answer is: the replay header first, then the status, and for a 409 the envelope's message. */
    public static Answer classify(int status, boolean replayed, String body) {
        if (replayed) {
            return Answer.REPLAY;
        }
        if (status >= 200 && status < 300) {
            return Answer.FIRST_WRITE;
        }
        if (status == 503) {
            return Answer.UNAVAILABLE;
        }
        if (status != 409) {
            return Answer.OTHER;
        }
        String message = message(body);
        if (MISMATCH_MESSAGE.equals(message)) {
            return Answer.MISMATCH;
        }
        if (message.startsWith(IN_FLIGHT_MESSAGE)) {
            return Answer.IN_FLIGHT;
        }
        if (message.startsWith(UNCERTAIN_MESSAGE)) {
            return Answer.UNCERTAIN;
        }
        return Answer.CONFLICT_OTHER;
    }

    private String judge(Sent what, Answer answer, String key, KeyTally tally, int status, boolean retryAfter,
            String body, String expectedBody) {
        switch (answer) {
            case UNAVAILABLE:
                return OVERLOAD;
            case OTHER:
                return "status " + status + " outside the contract (not an invariant break)";
            case FIRST_WRITE: {
                int firstWrites = tally.firstWrites.incrementAndGet();
                if (what == Sent.CHANGED_PAYLOAD) {
                    mismatchesOtherwise.increment();
                    return broken(Invariant.EVERY_MISMATCH_409, key + " (changed payload answered 2xx: executed)",
                            "INVARIANT BROKEN: changed payload executed (2xx) instead of 409");
                }
                if (firstWrites > 1) {
                    // Counted per key at the end; one constant text so that Gatling's errors show one line.
                    return "INVARIANT BROKEN: second 2xx for a key already executed";
                }
                return AS_AGREED;
            }
            default:
                break;
        }
        if (what == Sent.CHANGED_PAYLOAD) {
            if (answer == Answer.MISMATCH) {
                mismatchesAs409.increment();
                return AS_AGREED;
            }
            mismatchesOtherwise.increment();
            return broken(Invariant.EVERY_MISMATCH_409, key + " (changed payload answered " + answer.label + ")",
                    "INVARIANT BROKEN: changed payload answered " + (answer == Answer.REPLAY ? "as a replay"
                            : "409 without the mismatch message") + " instead of the mismatch 409");
        }
        // A same-payload request refused with "retry later" executed nothing twice: not served, never broken.
        return switch (answer) {
            case REPLAY -> what == Sent.NEW_KEY ? "a new key answered as a replay" : replay(key, body, expectedBody);
            case IN_FLIGHT -> !retryAfter ? "409 in flight without Retry-After"
                    : what == Sent.CONCURRENT_RESEND ? AS_AGREED
                    : what == Sent.REPLAY ? NOT_STORED : "409 in flight for a new key";
            case UNCERTAIN -> what == Sent.NEW_KEY ? "409 outcome uncertain for a new key" : NOT_RESENT;
            case MISMATCH -> "the same payload answered as a mismatch";
            default -> "409 with another message";
        };
    }

    private String replay(String key, String body, String expectedBody) {
        if (expectedBody == null) {
            return AS_AGREED;
        }
        if (expectedBody.equals(body)) {
            identicalReplays.increment();
            return AS_AGREED;
        }
        differentReplays.increment();
        return broken(Invariant.IDENTICAL_REPLAYS, key, "INVARIANT BROKEN: replay body differs from the first answer");
    }

    private String broken(Invariant invariant, String sample, String text) {
        brokenSamples.get(invariant).add(sample);
        return text;
    }

    private KeyTally tally(String key) {
        return keys.computeIfAbsent(key == null ? "(no key)" : key, k -> new KeyTally());
    }

    static String message(String body) {
        if (body == null) {
            return "";
        }
        Matcher matcher = MESSAGE.matcher(body);
        return matcher.find() ? matcher.group(1).replace("\\\"", "\"").replace("\\\\", "\\") : "";
    }

    // ---- the verdict ----

    /** Judges the run from the counts so far; called once the load is over. */
    public Conclusion conclude() {
        conclusion = new Conclusion(this);
        return conclusion;
    }

    public Conclusion conclusion() {
        Conclusion current = conclusion;
        return current != null ? current : conclude();
    }

    /** Prints the verdict (the simulation's {@code after()}: just before Gatling's table). */
    public void print() {
        System.out.println(String.join(System.lineSeparator(), conclusion().lines()));
        System.out.flush();
    }

    /** The verdict's gates, in order: the names of the pseudo-requests the run asserts. */
    public List<String> gates() {
        List<String> gates = new ArrayList<>();
        for (Invariant invariant : invariants) {
            gates.add(INVARIANT_GATE + invariant.label);
        }
        gates.add(CONTRACT_GATE);
        maxUnavailablePercent.ifPresent(max -> gates.add(unavailableGate(max)));
        return gates;
    }

    private static String unavailableGate(double max) {
        return "not served at most " + percent(max) + "%";
    }

    /** The result, computed once from the counters. */
    public static final class Conclusion {
        private final Map<Invariant, Status> statuses = new EnumMap<>(Invariant.class);
        private final Map<Invariant, String> details = new EnumMap<>(Invariant.class);
        private final Map<String, Boolean> gates = new LinkedHashMap<>();
        private final List<String> lines = new ArrayList<>();
        private final long unexpectedAnswers;

        private Conclusion(IdempotencyVerdict v) {
            long sent = v.sent.sum();
            long answered = v.answered.sum();
            long noAnswer = Math.max(0, sent - answered);
            long unavailable = v.byAnswer.get(Answer.UNAVAILABLE).sum();
            long refused409 = v.refused409.sum();
            long notServed = unavailable + refused409 + noAnswer;
            double notServedPercent = sent == 0 ? 0 : 100.0 * notServed / sent;
            unexpectedAnswers = v.unexpected.values().stream().mapToLong(LongAdder::sum).sum();

            for (Invariant invariant : v.invariants) {
                judge(v, invariant);
            }

            String title = "---- Idempotency verdict: " + v.simulation + " (profile " + v.profile + ") ";
            lines.add(title + "-".repeat(Math.max(4, 120 - title.length())));
            lines.add(row("keys sent", count(v.keys.size()), ""));
            lines.add(row("requests sent", count(sent), ""));
            for (Answer answer : Answer.values()) {
                String note = answer == Answer.OTHER && !v.otherStatuses.isEmpty()
                        ? "by status " + sorted(v.otherStatuses) : "";
                lines.add(row(answer.label, count(v.byAnswer.get(answer).sum()), note));
            }
            lines.add(row("no answer (timeout, connection error)", count(noAnswer), ""));
            for (Invariant invariant : v.invariants) {
                lines.add(row("invariant: " + invariant.label, statuses.get(invariant).label, details.get(invariant)));
            }
            lines.add(row("answers outside the contract", count(unexpectedAnswers),
                    unexpectedAnswers == 0 ? "" : sorted(v.unexpected).toString()));
            boolean allHeld = statuses.values().stream().allMatch(s -> s == Status.HELD);
            boolean anyBroken = statuses.containsValue(Status.BROKEN);
            lines.add("> IDEMPOTENCY: " + (allHeld ? "HELD" : anyBroken ? "BROKEN" : "NOT SHOWN")
                    + (allHeld ? " (every invariant held)" : anyBroken ? " (the run fails)"
                            : " (nothing answered could show an invariant: the run fails)")
                    + (unexpectedAnswers == 0 ? "" : "; answers outside the contract fail the run too"));

            String latency = "---- Latency verdict (apart from idempotency) ";
            lines.add(latency + "-".repeat(120 - latency.length()));
            lines.add(row("99th percentile", v.maxP99Millis.isPresent() ? "asserted" : "not asserted",
                    v.maxP99Millis.isPresent()
                            ? "below " + v.maxP99Millis.getAsInt() + " ms: see Gatling's assertion lines below"
                            : "pass -DmaxP99Millis=N to fail the run at N ms or more; percentiles in Gatling's table"));
            lines.add(row(NOT_SERVED, count(notServed) + " of " + count(sent),
                    percent(notServedPercent) + "%: " + (notServed == 0 ? "none"
                            : count(unavailable) + " 503, " + count(refused409) + " 409 refusals, " + count(noAnswer)
                                    + " no answer: overload, not an invariant break")
                            + "; " + (v.maxUnavailablePercent.isPresent()
                                    ? "asserted at most " + percent(v.maxUnavailablePercent.getAsDouble()) + "%"
                                    : "not asserted (-DmaxUnavailablePercent=N)")));
            lines.add("=".repeat(120));

            for (Invariant invariant : v.invariants) {
                gates.put(INVARIANT_GATE + invariant.label, statuses.get(invariant) == Status.HELD);
            }
            gates.put(CONTRACT_GATE, unexpectedAnswers == 0);
            v.maxUnavailablePercent.ifPresent(max -> gates.put(unavailableGate(max), notServedPercent <= max));
        }

        private void judge(IdempotencyVerdict v, Invariant invariant) {
            List<String> samples = v.brokenSamples.get(invariant).list();
            switch (invariant) {
                case ONE_FIRST_WRITE_PER_KEY -> {
                    long exactlyOne = 0;
                    long notWritten = 0;
                    List<String> duplicated = new ArrayList<>();
                    List<String> neverWritten = new ArrayList<>();
                    long duplicatedCount = 0;
                    long neverWrittenCount = 0;
                    for (Map.Entry<String, KeyTally> entry : new TreeMap<>(v.keys).entrySet()) {
                        KeyTally t = entry.getValue();
                        int firstWrites = t.firstWrites.get();
                        if (firstWrites == 1) {
                            exactlyOne++;
                        } else if (firstWrites > 1) {
                            if (duplicatedCount++ < SAMPLES) {
                                duplicated.add(entry.getKey() + "=" + firstWrites);
                            }
                        } else if (t.notServed.get() > 0 || t.sent.get() > t.answered.get()) {
                            notWritten++;
                        } else if (t.answered.get() > 0) {
                            // Answered (replays, 409s) though no answer for it was a first write.
                            if (neverWrittenCount++ < SAMPLES) {
                                neverWritten.add(entry.getKey());
                            }
                        }
                    }
                    String unserved = notWritten == 0 ? "" : "; " + count(notWritten)
                            + " keys not written (refused or not answered: overload)";
                    if (duplicatedCount > 0 || neverWrittenCount > 0) {
                        statuses.put(invariant, Status.BROKEN);
                        List<String> why = new ArrayList<>();
                        if (duplicatedCount > 0) {
                            why.add(count(duplicatedCount) + " keys with more than one 2xx, e.g. " + duplicated);
                        }
                        if (neverWrittenCount > 0) {
                            why.add(count(neverWrittenCount) + " keys answered without any 2xx, e.g. " + neverWritten);
                        }
                        details.put(invariant, String.join("; ", why));
                    } else if (exactlyOne == 0) {
                        statuses.put(invariant, Status.NOT_SHOWN);
                        details.put(invariant, "no key was answered with a first write" + unserved);
                    } else {
                        statuses.put(invariant, Status.HELD);
                        details.put(invariant, count(exactlyOne) + " keys, each exactly one 2xx" + unserved);
                    }
                }
                case IDENTICAL_REPLAYS -> {
                    long same = v.identicalReplays.sum();
                    long different = v.differentReplays.sum();
                    if (different > 0) {
                        statuses.put(invariant, Status.BROKEN);
                        details.put(invariant, count(different) + " of " + count(same + different)
                                + " replays differ from the first answer, e.g. keys " + samples);
                    } else if (same == 0) {
                        statuses.put(invariant, Status.NOT_SHOWN);
                        details.put(invariant, "no replay was answered");
                    } else {
                        statuses.put(invariant, Status.HELD);
                        details.put(invariant, count(same) + " replays, each byte for byte the first answer");
                    }
                }
                case EVERY_MISMATCH_409 -> {
                    long as409 = v.mismatchesAs409.sum();
                    long otherwise = v.mismatchesOtherwise.sum();
                    if (otherwise > 0) {
                        statuses.put(invariant, Status.BROKEN);
                        details.put(invariant, count(otherwise) + " of " + count(as409 + otherwise)
                                + " changed payloads not answered with the mismatch 409, e.g. " + samples);
                    } else if (as409 == 0) {
                        statuses.put(invariant, Status.NOT_SHOWN);
                        details.put(invariant, "no changed payload was answered");
                    } else {
                        statuses.put(invariant, Status.HELD);
                        details.put(invariant, count(as409) + " changed payloads, each 409 with the contract's message");
                    }
                }
                default -> throw new IllegalStateException(invariant.name());
            }
        }

        public Status status(Invariant invariant) {
            return statuses.get(invariant);
        }

        /** Every invariant held. */
        public boolean idempotencyHeld() {
            return statuses.values().stream().allMatch(s -> s == Status.HELD);
        }

        public long unexpectedAnswers() {
            return unexpectedAnswers;
        }

        /** Whether a gate passed; an unknown gate never does. */
        public boolean passed(String gate) {
            return gates.getOrDefault(gate, false);
        }

        /** Every gate passed: what the run's assertions on the gates will say (latency apart). */
        public boolean passed() {
            return gates.values().stream().allMatch(Boolean::booleanValue);
        }

        public List<String> lines() {
            return Collections.unmodifiableList(lines);
        }

        private static String row(String label, String value, String note) {
            String row = String.format(Locale.ROOT, "> %-58s %14s", label, value);
            return note.isEmpty() ? row : row + "   " + note;
        }

        private static <K extends Comparable<K>> Map<K, Long> sorted(Map<K, LongAdder> counts) {
            Map<K, Long> sorted = new TreeMap<>();
            counts.forEach((k, n) -> sorted.put(k, n.sum()));
            return sorted;
        }
    }

    static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    static String percent(double p) {
        return String.format(Locale.ROOT, "%.2f", p);
    }

    private static final class KeyTally {
        final AtomicInteger sent = new AtomicInteger();
        final AtomicInteger answered = new AtomicInteger();
        final AtomicInteger firstWrites = new AtomicInteger();
        /** Answers that served nothing: refusals (503, 409 retry later) and answers outside the contract. */
        final AtomicInteger notServed = new AtomicInteger();
    }

    /** The first few examples of a broken invariant, for the printed verdict. */
    private static final class Samples {
        private final AtomicInteger seen = new AtomicInteger();
        private final ConcurrentLinkedQueue<String> kept = new ConcurrentLinkedQueue<>();

        void add(String sample) {
            if (seen.getAndIncrement() < SAMPLES) {
                kept.add(sample);
            }
        }

        List<String> list() {
            return new ArrayList<>(kept);
        }
    }

    // ---- Gatling: the steps, checks, verdict scenario and assertions of a simulation ----

    /**
     * One request of the scenario with its verdict: counts it as sent for the session's {@value #KEY}, then judges
     * its answer (a request whose answer the contract does not allow is KO, with the reason as its error).
     */
    public ChainBuilder exchange(Sent what, HttpRequestActionBuilder request) {
        return exchange(what, request, null);
    }

    /** As {@link #exchange(Sent, HttpRequestActionBuilder)}; a replay must repeat {@code expectedBody} exactly. */
    public ChainBuilder exchange(Sent what, HttpRequestActionBuilder request,
            Function<Session, String> expectedBody) {
        requireGate(what, expectedBody != null);
        return exec(session -> {
            sending(session.getString(KEY));
            // A request without an answer runs no check: nothing from the previous answer may look like its own.
            // The first answer's body stays until the next new key: the key's later replays must repeat it.
            Session cleared = session.removeAll(STATUS, REPLAYED, RETRY_AFTER, OUTCOME);
            return what == Sent.NEW_KEY ? cleared.remove(FIRST_BODY) : cleared;
        }).exec(request.check(checks(what, expectedBody)));
    }

    /** A request that can break an invariant needs that invariant's gate, or its break would fail nothing. */
    void requireGate(Sent what, boolean comparesReplayBody) {
        if (what == Sent.CHANGED_PAYLOAD && !invariants.contains(Invariant.EVERY_MISMATCH_409)) {
            throw new IllegalStateException(simulation + " sends changed payloads: its verdict needs "
                    + Invariant.EVERY_MISMATCH_409);
        }
        if (comparesReplayBody && !invariants.contains(Invariant.IDENTICAL_REPLAYS)) {
            throw new IllegalStateException(simulation + " compares replay bodies: its verdict needs "
                    + Invariant.IDENTICAL_REPLAYS);
        }
    }

    private List<CheckBuilder> checks(Sent what, Function<Session, String> expectedBody) {
        // Gatling runs every check of a response in order, each one seeing what the earlier ones saved.
        List<CheckBuilder> checks = new ArrayList<>(List.of(
                status().saveAs(STATUS),
                header(REPLAYED_HEADER).withDefault("").saveAs(REPLAYED),
                header(RETRY_AFTER_HEADER).withDefault("").saveAs(RETRY_AFTER)));
        if (what == Sent.NEW_KEY) {
            checks.add(bodyString().saveAs(FIRST_BODY));
        }
        checks.add(bodyString()
                .transformWithSession((body, session) -> answered(what, session.getString(KEY),
                        session.getInt(STATUS), "true".equalsIgnoreCase(session.getString(REPLAYED)),
                        !session.getString(RETRY_AFTER).isEmpty(), body,
                        expectedBody == null ? null : expectedBody.apply(session)))
                .is(AS_AGREED).name("idempotency contract").logActualValueInError(true).saveAs(OUTCOME));
        return checks;
    }

    /** The last request of this session was answered as the contract allows (e.g. its first write succeeded). */
    public static boolean answeredAsAgreed(Session session) {
        return session.contains(OUTCOME);
    }

    /** The load, then one pseudo-request per gate, OK when the gate passed (see the class comment). */
    public PopulationBuilder followedByVerdict(PopulationBuilder load) {
        ChainBuilder verdict = exec(session -> {
            conclude();
            return session;
        });
        for (String gate : gates()) {
            verdict = verdict.exec(dummy(gate, 0).withSuccess(session -> conclusion().passed(gate)));
        }
        return load.andThen(scenario("Idempotency verdict").exec(verdict).injectOpen(atOnceUsers(1)));
    }

    /** One assertion per gate, and the latency assertion only when {@code -DmaxP99Millis} asks for it. */
    public List<Assertion> assertions() {
        List<Assertion> assertions = new ArrayList<>();
        for (String gate : gates()) {
            assertions.add(details(gate).successfulRequests().count().is(1L));
        }
        maxP99Millis.ifPresent(max -> assertions.add(global().responseTime().percentile(99.0).lt(max)));
        return assertions;
    }
}
