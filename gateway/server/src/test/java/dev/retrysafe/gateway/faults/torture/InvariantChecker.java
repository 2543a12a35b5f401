package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.faults.torture.RecordingUpstream.Drop;
import dev.retrysafe.gateway.faults.torture.RecordingUpstream.Lookup;
import dev.retrysafe.gateway.faults.torture.RecordingUpstream.Poll;
import dev.retrysafe.gateway.faults.torture.RecordingUpstream.Process;
import dev.retrysafe.gateway.faults.torture.RecordingUpstream.Receipt;
import dev.retrysafe.gateway.faults.torture.ReconcilerAuditLog.Settlement;
import dev.retrysafe.gateway.faults.torture.WireClient.Attempt;
import dev.retrysafe.gateway.idempotency.fingerprint.CanonicalJson;
import dev.retrysafe.gateway.idempotency.fingerprint.RequestFingerprinter;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Holds what the clients did and got, what the upstream received and what Redis recorded against the promises the
 * gateway makes, and counts, per invariant and route kind, the keys checked and the keys that break it.
 */
final class InvariantChecker {
    static final String EVERY_ATTEMPT_ENDED = "0. every attempt got an answer or a close within the client deadline";
    static final String AT_MOST_ONCE = "1. each scope reached the upstream at most once unless released";
    static final String FORWARDED_AS_FINGERPRINTED = "2. the upstream got exactly the bytes fingerprinted";
    static final String UNCERTAIN_WAS_SENT = "3. no UNCERTAIN record whose request the upstream never received";
    static final String NOTHING_LEFT_IN_FLIGHT = "4. no IN_FLIGHT record left after lease + response timeout";
    static final String SUCCESS_IS_STORED = "5. every complete 2xx answer is the stored one";
    static final String MALFORMED_REFUSED = "6. malformed framing: 400 or closed, nothing forwarded or reserved";
    static final String ANSWERED_IN_BOUND = "7. every attempt ended within the bound derived from the settings";
    static final String NOT_OWNER_EXPLAINED = "8. store-not-owner only where another party settled the record";
    static final String ACKNOWLEDGED_REPLAYS = "9. every write the upstream acknowledged replays once faults end";
    static final String RECONCILED_AS_ANSWERED = "10. a record completed by its lookup stores what the upstream answered";
    static final String RELEASED_UNRECEIVED = "11. a key released by its lookup had not reached the upstream";
    static final String NO_EARLY_LOOKUP = "12. no lookup before reconcile-after";
    static final String CONTRACT_KEPT = "13. the gateway's own answers are its route's contract (ietf: RFC 9457)";
    static final String PROCESS_TRACKED = "14. a stored 202 tracks its process until the upstream says it ended";
    static final String LOOKUP_AUTHORIZED = "15. a secured route's lookups carry its credentials (never a 401)";
    /**
     * The problem types of {@code contract: ietf} and their statuses, as docs/reference/responses.md publishes them:
     * the draft's 400 for a missing key, 422 for another payload and 409 for a request in flight among them.
     */
    static final Map<String, Integer> IETF_STATUSES = Map.ofEntries(Map.entry("idempotency-key-missing", 400),
            Map.entry("idempotency-key-invalid", 400), Map.entry("tenant-ambiguous", 400),
            Map.entry("idempotency-key-reused", 422), Map.entry("request-in-flight", 409),
            Map.entry("outcome-uncertain", 409), Map.entry("replay-too-large", 409),
            Map.entry("replay-unreadable", 409), Map.entry("request-body-too-large", 413),
            Map.entry("request-body-timeout", 408), Map.entry("request-body-malformed", 400),
            Map.entry("request-body-incomplete", 400), Map.entry("idempotency-unavailable", 503),
            Map.entry("upstream-unreachable", 502), Map.entry("upstream-connection-broken", 502),
            Map.entry("upstream-timeout", 504));
    private static final String PROBLEM_TYPES = "https://retrysafe.dev/problems/";
    private static final JsonMapper JSON = JsonMapper.builder().build();
    /**
     * Redis's clock has milliseconds (a lookup may be due up to 1 ms before reconcile-after by this JVM's clock), and
     * it is the wall clock, this one monotonic: a few milliseconds between them are not an early lookup.
     */
    static final Duration CLOCKS_SLACK = Duration.ofMillis(5);

    /** Per invariant: how many keys (or attempts) it was checked on, per route kind, and which broke it, with why. */
    static final class Tally {
        int checked;
        final Map<RouteKind, Integer> checkedOn = new EnumMap<>(RouteKind.class);
        final List<String> violations = new ArrayList<>();

        int checkedOn(RouteKind route) {
            return checkedOn.getOrDefault(route, 0);
        }
    }

    private final RequestFingerprinter fingerprinter =
            new RequestFingerprinter(new CanonicalJson(Set.of(), List.of()), 0, List.of());
    private final Map<String, Tally> tallies = new LinkedHashMap<>();

    /** @param storeFaulted the store torture: invariants 7 to 9 too */
    InvariantChecker(boolean storeFaulted) {
        for (String name : List.of(EVERY_ATTEMPT_ENDED, AT_MOST_ONCE, FORWARDED_AS_FINGERPRINTED, UNCERTAIN_WAS_SENT,
                NOTHING_LEFT_IN_FLIGHT, SUCCESS_IS_STORED, MALFORMED_REFUSED, RECONCILED_AS_ANSWERED,
                RELEASED_UNRECEIVED, NO_EARLY_LOOKUP, CONTRACT_KEPT, PROCESS_TRACKED, LOOKUP_AUTHORIZED)) {
            tallies.put(name, new Tally());
        }
        if (storeFaulted) {
            for (String name : List.of(ANSWERED_IN_BOUND, NOT_OWNER_EXPLAINED, ACKNOWLEDGED_REPLAYS)) {
                tallies.put(name, new Tally());
            }
        }
    }

    Map<String, Tally> tallies() {
        return tallies;
    }

    boolean allHold() {
        return tallies.values().stream().allMatch(t -> t.violations.isEmpty());
    }

    /** The invariants this run checked on nothing. */
    List<String> neverExercised() {
        return tallies.entrySet().stream().filter(e -> e.getValue().checked == 0).map(Map.Entry::getKey).toList();
    }

    /** Each key invariant of these route kinds ({@link RouteKind#keyInvariants}) checked on none of its keys. */
    List<String> keyInvariantsUnexercised(Iterable<RouteKind> routes) {
        List<String> missed = new ArrayList<>();
        for (RouteKind route : routes) {
            for (String invariant : route.keyInvariants) {
                if (tallies.get(invariant).checkedOn(route) == 0) {
                    missed.add(route.label + ": " + invariant);
                }
            }
        }
        return missed;
    }

    /**
     * @param record   the key's record after the run settled, {@code null} when there is none
     * @param receipts what the upstream received with this key, in order
     * @param drops    the key's requests the upstream dropped before reading their body (the request reached it)
     * @param forgotten Redis may have forgotten the key's record (a restart without persistence after it began, or a
     *                 lossy failover while it was under way): what needs the record to have been kept is not checked
     * @param lossWindowClosed when the key was under way in a lossy failover's window, when the last such window
     *                 closed (else null): a record reserved before then may be one the failover rolled back (its
     *                 release or settle lost), so invariants 3 and 4 are not checked on it; a record reserved after
     *                 (a reserve re-sent to the new master after the gateway gave up) is checked as any other
     */
    void check(KeyHistory history, RecordView record, List<Receipt> receipts, List<Drop> drops, boolean forgotten,
            Instant lossWindowClosed) {
        String key = history.key();
        RouteKind route = history.route();
        boolean rolledBack = lossWindowClosed != null && record != null && record.reservedAt() != null
                && !Instant.parse(record.reservedAt()).isAfter(lossWindowClosed);
        String window = lossWindowClosed == null ? "" : " [under way in a lossy failover's window, closed at "
                + lossWindowClosed + "]";
        for (Attempt attempt : history.attempts()) {
            check(EVERY_ATTEMPT_ENDED, route, key, attempt.status() != WireClient.NO_ANSWER,
                    () -> "attempt " + attempt.fault().label + " (" + attempt.detail() + ") hung");
        }

        List<Receipt> kept = receipts.stream().filter(r -> r.answeredStatus != RecordingUpstream.RELEASED_STATUS)
                .toList();
        check(AT_MOST_ONCE, route, key, forgotten || kept.size() <= 1,
                () -> kept.size() + " unreleased receipts " + ids(kept) + ", record " + describe(record));

        for (Receipt receipt : receipts) {
            boolean sentWhole = history.attempts().stream()
                    .anyMatch(a -> a.sentWhole() && Arrays.equals(a.body(), receipt.body));
            check(FORWARDED_AS_FINGERPRINTED, route, key, sentWhole, () -> "receipt " + receipt.id + " got "
                    + receipt.body.length + " bytes no client sent whole: " + text(receipt.body));
        }
        if (!forgotten && record != null && record.fingerprint() != null && !kept.isEmpty()) {
            String forwarded = fingerprinter.fingerprint("POST", route.path, null, "application/json",
                    kept.get(0).body).hex();
            check(FORWARDED_AS_FINGERPRINTED, route, key, forwarded.equals(record.fingerprint()),
                    () -> "record fingerprint " + record.fingerprint() + " but receipt " + kept.get(0).id
                            + " carried a body fingerprinted " + forwarded);
        }

        if (record != null && "UNCERTAIN".equals(record.state())) {
            check(UNCERTAIN_WAS_SENT, route, key, rolledBack || !receipts.isEmpty() || !drops.isEmpty(),
                    () -> "UNCERTAIN ("
                    + record.uncertainReason()
                    + ") but the upstream never received it; attempts " + attempts(history) + window);
        }

        check(NOTHING_LEFT_IN_FLIGHT, route, key, rolledBack || record == null || !"IN_FLIGHT".equals(record.state()),
                () -> "still IN_FLIGHT, reserved at " + record.reservedAt() + ", lease until " + record.leaseUntil()
                        + "; receipts " + ids(receipts) + "; attempts " + attempts(history) + window);

        for (Attempt attempt : history.attempts()) {
            if (!forgotten && attempt.status() >= 200 && attempt.status() < 300) {
                String stored = storedBody(record);
                boolean fromUpstream = receipts.stream()
                        .anyMatch(r -> Arrays.equals(r.responseBody, attempt.responseBody()));
                check(SUCCESS_IS_STORED, route, key, stored != null && stored.equals(text(attempt.responseBody()))
                                && fromUpstream,
                        () -> "client got " + attempt.status() + " " + text(attempt.responseBody()) + ", record "
                                + describe(record) + " stores " + stored + ", from upstream: " + fromUpstream);
            }
        }

        if (history.fault().malformed) {
            Attempt refused = history.attempts().get(0);
            boolean anotherSentWhole = history.attempts().stream().anyMatch(Attempt::sentWhole);
            check(MALFORMED_REFUSED, route, key, refused.status() == 400 || refused.status() == WireClient.CLOSED,
                    () -> refused.detail() + " answered " + refused.status());
            if (!anotherSentWhole) {
                check(MALFORMED_REFUSED, route, key, receipts.isEmpty() && record == null,
                        () -> refused.detail() + ": receipts " + ids(receipts) + ", record " + describe(record));
            }
            for (Attempt retry : history.attempts().subList(1, history.attempts().size())) {
                check(MALFORMED_REFUSED, route, key, retry.status() != 409 && retry.status() != 422,
                        () -> "the correct retry after " + refused.detail() + " got " + retry.status() + " "
                                + text(retry.responseBody()));
            }
        }
        checkContract(history, receipts);
    }

    /**
     * Every answer the gateway wrote itself (a status of 400 or more that is not the upstream's, for a request framed
     * well) is in its route's contract: RFC 9457 problem details under {@code ietf}, each type with its status, the
     * Onboarding envelope otherwise; a request without a key is refused 400 (ietf) or 422 and never forwarded.
     */
    private void checkContract(KeyHistory history, List<Receipt> receipts) {
        RouteKind route = history.route();
        for (Attempt attempt : history.attempts()) {
            if (attempt.status() < 400 || attempt.fault().malformed || receipts.stream()
                    .anyMatch(r -> Arrays.equals(r.responseBody, attempt.responseBody()))) {
                continue;
            }
            String broken = contractBroken(route, attempt);
            check(CONTRACT_KEPT, route, history.key(), broken == null, () -> attempt.fault().label + " got "
                    + attempt.status() + " " + attempt.contentType() + " " + text(attempt.responseBody()) + ": "
                    + broken);
        }
        if (history.fault() == ClientFault.MISSING_KEY) {
            Attempt refused = history.attempts().get(0);
            int expected = route == RouteKind.IETF ? 400 : 422;
            check(CONTRACT_KEPT, route, history.key(), refused.status() == expected
                            && (route != RouteKind.IETF || text(refused.responseBody()).contains(PROBLEM_TYPES
                            + "idempotency-key-missing\"")) || refused.status() == WireClient.CLOSED,
                    () -> "without a key, expected " + expected + ", got " + refused.status() + " "
                            + text(refused.responseBody()));
            List<Receipt> keyless = receipts.stream().filter(r -> r.keyless).toList();
            check(CONTRACT_KEPT, route, history.key(), keyless.isEmpty(),
                    () -> "forwarded without its key: receipts " + ids(keyless));
        }
    }

    /** What is wrong with one of the gateway's own answers under the route's contract, null when nothing. */
    private static String contractBroken(RouteKind route, Attempt attempt) {
        JsonNode body;
        try {
            body = JSON.readTree(attempt.responseBody() == null ? new byte[0] : attempt.responseBody());
        } catch (RuntimeException notJson) {
            return "not JSON";
        }
        String contentType = attempt.contentType() == null ? "" : attempt.contentType();
        if (route == RouteKind.IETF) {
            String type = body.path("type").asString("");
            Integer status = IETF_STATUSES.get(type.startsWith(PROBLEM_TYPES) ? type.substring(PROBLEM_TYPES.length())
                    : type);
            List<String> names = new ArrayList<>(body.propertyNames());
            return !contentType.startsWith("application/problem+json") ? "not application/problem+json"
                    : !names.equals(List.of("type", "title", "status", "detail")) ? "members " + names
                    : status == null ? "unknown problem type " + type
                    : status != attempt.status() ? type + " is " + status + " in the contract"
                    : body.path("status").asInt(-1) != attempt.status() ? "its status member differs"
                    : body.path("title").asString("").isEmpty() ? "no title" : null;
        }
        JsonNode envelope = body.path("status");
        return !contentType.startsWith("application/json") ? "not application/json"
                : !"FAILED".equals(envelope.path("status").asString("")) ? "not the Onboarding envelope"
                : envelope.path("reason").asInt(-1) != attempt.status() ? "its reason differs from the status"
                : envelope.path("message").asString("").isEmpty() ? "no message" : null;
    }

    /**
     * The route reconciles with the upstream: what its lookups did to this key's records.
     *
     * @param drops       the key's requests the upstream dropped unread
     * @param lookups     the reconciler's lookups of this key, as the upstream received them
     * @param settlements the reconciler's settlements of this key's scope, from its audit lines
     */
    void checkReconciliation(KeyHistory history, RecordView record, List<Receipt> receipts, List<Drop> drops,
            List<Lookup> lookups, List<Settlement> settlements, Duration reconcileAfter) {
        String key = history.key();
        RouteKind route = history.route();
        for (Settlement settlement : settlements) {
            List<Receipt> takenBefore = receipts.stream()
                    .filter(r -> r.taken() && r.receivedNanos < settlement.atNanos()).toList();
            // A settled record was UNCERTAIN: invariant 3 holds at the settlement too, since a release deletes it.
            boolean reached = receipts.stream().anyMatch(r -> r.receivedNanos < settlement.atNanos())
                    || drops.stream().anyMatch(d -> d.atNanos() < settlement.atNanos());
            check(UNCERTAIN_WAS_SENT, route, key, reached, () -> "settled by its lookup, but no request of it had "
                    + "reached the upstream; attempts " + attempts(history));
            if (settlement.completed()) {
                check(RECONCILED_AS_ANSWERED, route, key, !takenBefore.isEmpty(), () -> "completed by its lookup, but the "
                        + "upstream had taken no request with it; receipts " + ids(receipts));
            } else {
                check(RELEASED_UNRECEIVED, route, key, takenBefore.isEmpty(), () -> "released by its lookup, but the "
                        + "upstream had taken receipts " + ids(takenBefore) + " before; attempts " + attempts(history));
            }
        }
        if (record != null && "COMPLETED".equals(record.state()) && "reconciler".equals(record.resolvedBy())) {
            String stored = storedBody(record);
            check(RECONCILED_AS_ANSWERED, route, key, record.status() != null
                            && record.status() == RecordingUpstream.FOUND_STATUS && receipts.stream()
                            .anyMatch(r -> r.taken() && text(r.responseBody).equals(stored)),
                    () -> "the reconciled record stores " + record.status() + " " + stored
                            + ", which the upstream answered to none of receipts " + ids(receipts));
        }
        // The record turns UNCERTAIN only after the key's first attempt began: the earliest its lookup may come.
        for (Lookup lookup : lookups) {
            long waited = lookup.atNanos() - history.startedNanos();
            check(NO_EARLY_LOOKUP, route, key, waited >= reconcileAfter.minus(CLOCKS_SLACK).toNanos(),
                    () -> "looked up " + Duration.ofNanos(waited).toMillis() + " ms after its first attempt began, "
                            + "reconcile-after is " + reconcileAfter.toMillis() + " ms");
            if (route.lookupSecured()) {
                check(LOOKUP_AUTHORIZED, route, key, lookup.secured()
                                && lookup.status() != RecordingUpstream.UNAUTHORIZED_STATUS,
                        () -> "a lookup " + (lookup.secured() ? "without the route's bearer token, answered 401"
                                : "on the unsecured path"));
            }
        }
    }

    /**
     * The process-tracking route, once the upstream ended every process and the fleet had time to poll: a stored 202
     * names the process its record tracks, and the record says it ended, with the status the upstream reported.
     *
     * @param processes the upstream's processes, by id
     * @param forgotten Redis may have forgotten the record or its poll (as {@link #check})
     */
    void checkProcess(KeyHistory history, RecordView record, Map<String, Process> processes, boolean forgotten) {
        if (forgotten || record == null || !"COMPLETED".equals(record.state()) || record.status() == null
                || record.status() != 202) {
            return;
        }
        String stored = storedBody(record);
        String named;
        try {
            named = stored == null ? null : JSON.readTree(stored).path("processId").asString(null);
        } catch (RuntimeException notJson) {
            named = null;
        }
        Process process = named == null ? null : processes.get(named);
        String processId = named;
        check(PROCESS_TRACKED, history.route(), history.key(), process != null && named.equals(record.processId())
                        && "ENDED".equals(record.processState()) && process.reportedEnd != null
                        && process.reportedEnd.equals(record.processStatus()),
                () -> "stores a 202 naming " + processId + " (" + (process == null ? "unknown upstream"
                        : "ended " + process.reportedEnd + " after " + process.polls + " polls") + "), record tracks "
                        + record.processId() + " " + record.processState() + " " + record.processStatus());
    }

    /** Every status read the fleet made was of a process an upstream 202 named. */
    void checkPolls(List<Poll> polls) {
        for (Poll poll : polls) {
            check(PROCESS_TRACKED, RouteKind.PROCESS, poll.processId(), poll.known(),
                    () -> "polled a process no 202 named");
        }
    }

    /**
     * Each attempt the client did not hang up itself ended (answer or close) within {@code bound}
     * ({@link TortureRun#answerBound()}).
     */
    void checkAnswerBound(KeyHistory history, Duration bound) {
        for (Attempt attempt : history.attempts()) {
            if (attempt.status() != WireClient.HUNG_UP) {
                check(ANSWERED_IN_BOUND, history.route(), history.key(), attempt.millis() <= bound.toMillis(),
                        () -> "attempt " + attempt.fault().label + " -> " + attempt.status() + " took "
                                + attempt.millis() + " ms; attempts " + attempts(history));
            }
        }
    }

    /**
     * One {@code store-not-owner} event: explained only when the record shows another party settled it (a reserve
     * that found its lease lapsed and wrote UNCERTAIN, a later reservation, an operator), or Redis forgot it.
     */
    void checkNotOwner(String scopeHash, RouteKind route, String refused, RecordView record, boolean forgotten) {
        boolean explained = forgotten || record != null && (record.resolvedBy() != null
                || (record.attempts() != null && record.attempts() > 1)
                || ("UNCERTAIN".equals(record.state()) && record.uncertainReason() != null
                        && record.uncertainReason().startsWith("lease lapsed")));
        check(NOT_OWNER_EXPLAINED, route, scopeHash, explained, () -> refused + ", but the record, " + describe(record)
                + ", shows nobody else settled it");
    }

    /** The clean retry, after the faults, of a key whose write the upstream acknowledged (receipt answered 201). */
    void checkReplay(String key, Receipt acknowledged, Attempt retry) {
        // The replay's status is the route's replay-status (200 by default): the body is what must match.
        check(ACKNOWLEDGED_REPLAYS, acknowledged.route, key, retry.status() >= 200 && retry.status() < 300
                        && Arrays.equals(retry.responseBody(), acknowledged.responseBody),
                () -> "the upstream answered receipt " + acknowledged.id + " " + acknowledged.answeredStatus + " " + text(acknowledged.responseBody)
                        + ", the retry got " + retry.status() + " " + text(retry.responseBody()));
    }

    /** The in-flight gauge, read after the run settled. */
    void checkGauge(double inFlight) {
        check(NOTHING_LEFT_IN_FLIGHT, null, "idempotency_requests_in_flight", inFlight == 0,
                () -> "gauge still " + inFlight);
    }

    /** @param route the route kind it was checked on; null for none (the gauge) */
    private void check(String invariant, RouteKind route, String key, boolean holds, Supplier<String> why) {
        Tally tally = tallies.get(invariant);
        tally.checked++;
        if (route != null) {
            tally.checkedOn.merge(route, 1, Integer::sum);
        }
        if (!holds) {
            tally.violations.add((route == null ? "" : route.label + " ") + key + ": " + why.get());
        }
    }

    private static String storedBody(RecordView record) {
        if (record == null || !"COMPLETED".equals(record.state()) || record.response() == null) {
            return null;
        }
        RecordView.StoredBody body = record.response();
        return body.body() != null ? body.body()
                : body.bodyBase64() != null ? text(Base64.getDecoder().decode(body.bodyBase64())) : null;
    }

    private static String describe(RecordView record) {
        return record == null ? "none" : record.state() + " (attempts " + record.attempts() + ", status "
                + record.status() + (record.uncertainReason() == null ? "" : ", " + record.uncertainReason()) + ")";
    }

    private static String attempts(KeyHistory history) {
        return history.attempts().stream().map(a -> a.fault().label + "->" + a.status() + (a.sentWhole() ? "" : "*"))
                .toList().toString();
    }

    private static List<Integer> ids(List<Receipt> receipts) {
        return receipts.stream().map(r -> r.id).toList();
    }

    private static String text(byte[] bytes) {
        return bytes == null ? "null" : new String(bytes, StandardCharsets.ISO_8859_1);
    }
}
