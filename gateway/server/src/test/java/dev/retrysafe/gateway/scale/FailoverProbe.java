package dev.retrysafe.gateway.scale;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

/**
 * What clients see through a Redis failover: sends requests with fresh keys, one after the other, from the kill
 * until {@code healedAfter} in a row succeed (or a deadline), and keeps every status and the accepted keys.
 */
final class FailoverProbe {
    final Map<Integer, Integer> statuses = new TreeMap<>();
    final List<String> accepted = new ArrayList<>();
    int consecutiveOk;

    static FailoverProbe run(Supplier<String> keys, ToIntFunction<String> send, int healedAfter, Duration deadline) {
        FailoverProbe probe = new FailoverProbe();
        long until = System.nanoTime() + deadline.toNanos();
        while (probe.consecutiveOk < healedAfter && System.nanoTime() < until) {
            String key = keys.get();
            int status = send.applyAsInt(key);
            probe.statuses.merge(status, 1, Integer::sum);
            if (status == 202) {
                probe.accepted.add(key);
                probe.consecutiveOk++;
            } else {
                probe.consecutiveOk = 0;
            }
        }
        System.out.println("Statuses from the kill until " + healedAfter + " in a row succeeded: " + probe.statuses);
        return probe;
    }
}
