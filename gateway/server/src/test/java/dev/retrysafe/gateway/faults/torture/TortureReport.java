package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.faults.torture.RecordingUpstream.Receipt;
import dev.retrysafe.gateway.faults.torture.WireClient.Attempt;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * What a run did and found, as text: counts per fault kind, per record state and per invariant, then violations.
 * {@code storeSummary}: the store nemesis's faults and figures (none in the wire torture), reconciliation, processes
 * and the follow-up waits. {@code designedFor}: the route kinds whose designed exchanges all ran, so whose key
 * invariants the run must have exercised.
 */
record TortureReport(TortureSettings settings, List<KeyHistory> histories, Map<String, RecordView> records,
        List<Receipt> receipts, InvariantChecker checker, Duration ran, Duration settling, boolean restarted,
        String storeSummary, List<RouteKind> designedFor) {
    private static final int VIOLATIONS_SHOWN = 15;

    /** Every invariant held, and each key invariant of {@link #designedFor} was exercised. */
    boolean passed() {
        return checker.allHold() && checker.keyInvariantsUnexercised(designedFor).isEmpty();
    }

    String text() {
        StringBuilder out = new StringBuilder();
        long attempts = histories.stream().mapToLong(h -> h.attempts().size()).sum();
        out.append(settings.storeFaulted() ? "Store torture (" + settings.topology().label + "), " : "Wire torture, ")
                .append(Instant.now()).append('\n')
                .append("  seed ").append(settings.seed()).append(", ").append(histories.size()).append(" exchanges (")
                .append(attempts).append(" requests), ").append(settings.threads()).append(" client threads")
                .append(settings.restart() ? ", gateway restarted mid-run: " + restarted : "").append('\n')
                .append("  ran ").append(ran.toMillis()).append(" ms, settled in ").append(settling.toMillis())
                .append(" ms; ").append(Runtime.getRuntime().availableProcessors()).append(" cores, Java ")
                .append(System.getProperty("java.version")).append('\n')
                .append("  replay: ").append(settings.replayCommand()).append('\n')
                .append(storeSummary);
        out.append("Route kind -> exchanges; records\n");
        histories.stream().collect(Collectors.groupingBy(KeyHistory::route, TreeMap::new, Collectors.toList()))
                .forEach((route, keys) -> out.append(String.format("  %-34s %6d  %s%n", route.label, keys.size(),
                        keys.stream().map(k -> records.get(k.key())).filter(r -> r != null)
                                .collect(Collectors.groupingBy(RecordView::state, TreeMap::new,
                                        Collectors.counting())))));
        out.append("Client fault -> exchanges; statuses of first attempts | of retries (-1 closed, -2 client hung up)\n");
        histories.stream().collect(Collectors.groupingBy(KeyHistory::fault, TreeMap::new, Collectors.toList()))
                .forEach((fault, keys) -> out.append(String.format("  %-34s %6d  %s | %s%n", fault.label, keys.size(),
                        statuses(keys.stream().flatMap(k -> firstAttempts(k).stream()).toList()),
                        statuses(keys.stream().flatMap(k -> retries(k).stream()).toList()))));
        out.append("Upstream fault -> keys; requests received\n");
        Map<UpstreamFault, Long> received = receipts.stream()
                .collect(Collectors.groupingBy(r -> r.fault, Collectors.counting()));
        histories.stream().collect(Collectors.groupingBy(KeyHistory::upstream, TreeMap::new, Collectors.counting()))
                .forEach((fault, keys) -> out.append(String.format("  %-34s %6d  %d%n", fault.label, keys,
                        received.getOrDefault(fault, 0L))));
        Map<String, Long> states = records.values().stream()
                .collect(Collectors.groupingBy(RecordView::state, TreeMap::new, Collectors.counting()));
        out.append("Records: ").append(states).append(", none: ").append(histories.size() - records.size()).append('\n');
        out.append("Invariants (checked / violated; checked per route kind: ").append(String.join(", ",
                Arrays.stream(RouteKind.values()).map(r -> r.label).toList())).append(")\n");
        checker.tallies().forEach((name, tally) -> out.append(String.format("  %-82s %7d / %d  %s%n", name,
                tally.checked, tally.violations.size(), Arrays.stream(RouteKind.values())
                        .map(r -> String.valueOf(tally.checkedOn(r))).collect(Collectors.joining(", ")))));
        checker.neverExercised().forEach(name -> out.append("NEVER EXERCISED in this run: ").append(name)
                .append('\n'));
        checker.keyInvariantsUnexercised(designedFor).forEach(missed -> out.append(
                "KEY INVARIANT NOT EXERCISED (the run was designed to): ").append(missed).append('\n'));
        checker.tallies().forEach((name, tally) -> {
            if (!tally.violations.isEmpty()) {
                out.append("VIOLATED ").append(name).append('\n');
                tally.violations.stream().limit(VIOLATIONS_SHOWN).forEach(v -> out.append("  ").append(v).append('\n'));
                if (tally.violations.size() > VIOLATIONS_SHOWN) {
                    out.append("  ... and ").append(tally.violations.size() - VIOLATIONS_SHOWN).append(" more\n");
                }
            }
        });
        out.append(passed() ? "ALL INVARIANTS HELD" : checker.allHold() ? "KEY INVARIANTS NOT EXERCISED, seed "
                + settings.seed() : "INVARIANTS BROKEN, seed " + settings.seed()).append('\n');
        return out.toString();
    }

    /**
     * Writes the report to {@code target/torture/} and returns its path; next to it, one line per key (its scope
     * hash, as the gateway logs it, faults, attempts, receipts, record) to follow a violation into the logs.
     */
    Path write() throws IOException {
        Path directory = Path.of("target", "torture");
        Files.createDirectories(directory);
        String name = (!settings.storeFaulted() ? "torture-" : settings.topology() == StoreTopology.STANDALONE
                ? "store-torture-" : "store-torture-" + settings.topology().label + "-") + settings.seed();
        Path file = directory.resolve(name + ".txt");
        Files.writeString(file, text());
        Map<String, List<Integer>> receiptIds = receipts.stream().filter(r -> r.key != null).collect(
                Collectors.groupingBy(r -> r.key, Collectors.mapping(r -> r.id, Collectors.toList())));
        List<String> lines = new ArrayList<>();
        lines.add("key\troute\tscope\tclient-fault\tupstream-fault\tattempts\treceipts\trecord");
        for (KeyHistory history : histories) {
            RecordView record = records.get(history.key());
            lines.add(String.join("\t", history.key(), history.route().label, TortureRun.scope(history).hash(),
                    history.fault().label,
                    history.upstream().label, history.attempts().stream()
                            .map(a -> a.status() + (a.sentWhole() ? "" : "*") + " " + a.detail()).toList().toString(),
                    String.valueOf(receiptIds.getOrDefault(history.key(), List.of())),
                    record == null ? "-" : record.state()));
        }
        Files.write(directory.resolve(name + "-keys.tsv"), lines);
        return file;
    }

    private static List<Attempt> firstAttempts(KeyHistory history) {
        int retries = retries(history).size();
        return history.attempts().subList(0, history.attempts().size() - retries);
    }

    /** The clean retry is the last attempt, when there is one after the faulty ones. */
    private static List<Attempt> retries(KeyHistory history) {
        List<Attempt> all = history.attempts();
        Attempt last = all.get(all.size() - 1);
        return all.size() > 1 && last.fault() == ClientFault.CLEAN && history.fault() != ClientFault.CLEAN
                ? List.of(last) : List.of();
    }

    private static Map<Integer, Long> statuses(List<Attempt> attempts) {
        return attempts.stream().collect(Collectors.groupingBy(Attempt::status, TreeMap::new, Collectors.counting()));
    }
}
