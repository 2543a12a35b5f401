package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.faults.torture.WireClient.Attempt;
import java.util.List;

/**
 * Everything the clients did with one key: its fault, how the upstream answers it, its attempts in order, and when
 * its first attempt began ({@code System.nanoTime}).
 */
record KeyHistory(String key, ClientFault fault, UpstreamFault upstream, List<Attempt> attempts, long startedNanos) {
}
