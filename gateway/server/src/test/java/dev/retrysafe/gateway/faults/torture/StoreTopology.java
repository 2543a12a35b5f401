package dev.retrysafe.gateway.faults.torture;

import java.util.Arrays;
import java.util.List;

/**
 * Which Redis the store torture's gateway talks to; the name is how {@code -Dtorture.store-topology} picks it. A
 * standalone Redis is reached through the fault proxy and restarted; a Sentinel-managed master with a replica, or a
 * three-master Cluster with a replica each, is reached directly (Lettuce learns every node's address from Sentinel
 * or from the Cluster itself, so a proxy in front of one node would be bypassed) and failed over.
 */
enum StoreTopology {
    STANDALONE("standalone"),
    SENTINEL("sentinel"),
    CLUSTER("cluster");

    final String label;

    StoreTopology(String label) {
        this.label = label;
    }

    /** The store faults that apply here: the proxy's and restarts on a standalone Redis, failovers on the others. */
    List<StoreFault> faults() {
        return Arrays.stream(StoreFault.values()).filter(f -> f.failover == (this != STANDALONE)).toList();
    }

    static StoreTopology ofLabel(String label) {
        return Arrays.stream(values()).filter(t -> t.label.equals(label.trim())).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("torture.store-topology: unknown topology " + label
                        + "; known: standalone, sentinel, cluster"));
    }
}
