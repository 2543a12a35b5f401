package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.faults.torture.WireClient.Attempt;
import java.util.List;

/**
 * Everything the clients did with one key: the route it went to, its fault, how the upstream answers it, its attempts
 * in order, and when its first attempt began ({@code System.nanoTime}).
 */
record KeyHistory(String key, RouteKind route, ClientFault fault, UpstreamFault upstream, List<Attempt> attempts,
        long startedNanos) {
}
