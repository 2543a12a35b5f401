package dev.retrysafe.loadtests.soak;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The end of a rolling-restart soak (load-tests/rolling-restart.sh): what the upstream says it did, from its write
 * log, against what the gateways' records say, for every key the load sent. Pure: the records are looked up by
 * {@link RollingRestartCheck}, which then asks this class whether the fleet kept its promises.
 *
 * <ul>
 *   <li><b>one upstream write per key</b>: no key in the write log twice (the soak releases nothing), and no write
 *       for a key the load never sent;</li>
 *   <li><b>no lost result</b>: a key the upstream wrote has a COMPLETED record holding the process the upstream
 *       answered; a key it never wrote has no record of a 2xx result it never produced;</li>
 *   <li><b>no record stuck</b>: no record of a sent key left IN_FLIGHT or UNCERTAIN, and the fleet's index of
 *       unsettled records (the operator list) empty;</li>
 *   <li><b>every pending process seen to its end</b>: each record that names a process says it ENDED.</li>
 * </ul>
 */
public final class RollingRestartVerdict {

    /** What the operator API shows of a record (the fields this check reads). */
    public record Record(String state, int status, String processId, String processState) {

        boolean completedWith2xx() {
            return "COMPLETED".equals(state) && status >= 200 && status < 300;
        }
    }

    public enum Invariant {
        ONE_WRITE_PER_KEY("one upstream write per key"),
        NO_LOST_RESULT("no lost result"),
        NO_STUCK_RECORD("no record stuck"),
        EVERY_PROCESS_ENDED("every pending process seen to its end");

        public final String label;

        Invariant(String label) {
            this.label = label;
        }
    }

    private static final int SAMPLES = 5;

    private final Map<Invariant, Integer> checked = new EnumMap<>(Invariant.class);
    private final Map<Invariant, List<String>> broken = new EnumMap<>(Invariant.class);
    private final Map<Invariant, Integer> brokenCount = new EnumMap<>(Invariant.class);
    private int keysSent;
    private int keysWritten;
    private int keysNeverWritten;
    private int processes;

    private RollingRestartVerdict() {
        for (Invariant invariant : Invariant.values()) {
            checked.put(invariant, 0);
            broken.put(invariant, new ArrayList<>());
            brokenCount.put(invariant, 0);
        }
    }

    /**
     * @param sentKeys every key the load sent
     * @param writesByKey the upstream's write log: the process ids it answered, per key
     * @param records the record of each sent key (empty: no record)
     * @param unsettled the scope hashes the operator list shows IN_FLIGHT or UNCERTAIN, whatever their age
     */
    public static RollingRestartVerdict judge(Set<String> sentKeys, Map<String, List<String>> writesByKey,
            Map<String, Optional<Record>> records, List<String> unsettled) {
        RollingRestartVerdict verdict = new RollingRestartVerdict();
        verdict.keysSent = sentKeys.size();
        for (Map.Entry<String, List<String>> written : writesByKey.entrySet()) {
            String key = written.getKey();
            verdict.check(Invariant.ONE_WRITE_PER_KEY);
            if (written.getValue().size() > 1) {
                verdict.broke(Invariant.ONE_WRITE_PER_KEY, "key " + key + " written " + written.getValue().size()
                        + " times: processes " + written.getValue());
            }
            if (!sentKeys.contains(key)) {
                verdict.broke(Invariant.ONE_WRITE_PER_KEY, "key " + key + " written but never sent by the load");
            }
        }
        for (String key : new TreeSet<>(sentKeys)) {
            Optional<Record> record = records.getOrDefault(key, Optional.empty());
            List<String> writes = writesByKey.getOrDefault(key, List.of());
            verdict.check(Invariant.NO_LOST_RESULT);
            if (writes.isEmpty()) {
                verdict.keysNeverWritten++;
                if (record.isPresent() && record.get().completedWith2xx()) {
                    verdict.broke(Invariant.NO_LOST_RESULT, "key " + key + " has a " + record.get().status()
                            + " result (process " + record.get().processId() + ") the upstream never produced");
                }
            } else {
                verdict.keysWritten++;
                String written = writes.get(writes.size() - 1);
                if (record.isEmpty()) {
                    verdict.broke(Invariant.NO_LOST_RESULT, "key " + key + " written (process " + written
                            + ") but has no record: a retry would write again");
                } else if (!record.get().completedWith2xx() && !isUnsettled(record.get())) {
                    verdict.broke(Invariant.NO_LOST_RESULT, "key " + key + " written (process " + written
                            + ") but its record is " + record.get().state() + " " + record.get().status());
                } else if (record.get().completedWith2xx() && !writes.contains(record.get().processId())) {
                    verdict.broke(Invariant.NO_LOST_RESULT, "key " + key + " written as process " + written
                            + " but its record replays process " + record.get().processId());
                }
            }
            verdict.check(Invariant.NO_STUCK_RECORD);
            if (record.isPresent() && isUnsettled(record.get())) {
                verdict.broke(Invariant.NO_STUCK_RECORD, "key " + key + " is " + record.get().state());
            }
            if (record.isPresent() && record.get().processId() != null) {
                verdict.processes++;
                verdict.check(Invariant.EVERY_PROCESS_ENDED);
                if (!"ENDED".equals(record.get().processState())) {
                    verdict.broke(Invariant.EVERY_PROCESS_ENDED, "key " + key + ": process "
                            + record.get().processId() + " is " + record.get().processState());
                }
            }
        }
        for (String scopeHash : unsettled) {
            verdict.broke(Invariant.NO_STUCK_RECORD, "scope " + scopeHash + " is in the index of unsettled records");
        }
        return verdict;
    }

    private static boolean isUnsettled(Record record) {
        return "IN_FLIGHT".equals(record.state()) || "UNCERTAIN".equals(record.state());
    }

    private void check(Invariant invariant) {
        checked.merge(invariant, 1, Integer::sum);
    }

    private void broke(Invariant invariant, String what) {
        brokenCount.merge(invariant, 1, Integer::sum);
        if (broken.get(invariant).size() < SAMPLES) {
            broken.get(invariant).add(what);
        }
    }

    /** Every invariant held, and each was shown by at least one key. */
    public boolean held() {
        for (Invariant invariant : Invariant.values()) {
            if (status(invariant) != Status.HELD) {
                return false;
            }
        }
        return true;
    }

    public enum Status { HELD, BROKEN, NOT_SHOWN }

    public Status status(Invariant invariant) {
        if (brokenCount.get(invariant) > 0) {
            return Status.BROKEN;
        }
        return checked.get(invariant) == 0 ? Status.NOT_SHOWN : Status.HELD;
    }

    public int brokenCount(Invariant invariant) {
        return brokenCount.get(invariant);
    }

    public String report() {
        StringBuilder text = new StringBuilder();
        text.append("keys sent ").append(keysSent).append(", written by the upstream ").append(keysWritten)
                .append(", never written ").append(keysNeverWritten).append(", records naming a process ")
                .append(processes).append('\n');
        for (Invariant invariant : Invariant.values()) {
            Status status = status(invariant);
            text.append(String.format("%-40s %-9s (%d checked%s)%n", invariant.label, status.name().replace('_', ' '),
                    checked.get(invariant), status == Status.BROKEN ? ", " + brokenCount.get(invariant) + " broken" : ""));
            for (String sample : broken.get(invariant)) {
                text.append("    ").append(sample).append('\n');
            }
        }
        text.append(held() ? "VERDICT: every invariant held" : "VERDICT: BROKEN").append('\n');
        return text.toString();
    }
}
