package dev.retrysafe.gateway.faults.torture;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The run's knobs, from system properties so that a failure can be replayed: {@code torture.seed},
 * {@code torture.exchanges}, {@code torture.threads}, {@code torture.faults} (labels, comma-separated, client and
 * upstream ones mixed; none means all) and {@code torture.restart} (stop and start the gateway once mid-run). The
 * store torture adds {@code torture.store-faults} (labels of {@link StoreFault}, comma-separated; none means all):
 * with store faults the gateway reaches its Redis through the store nemesis.
 */
record TortureSettings(long seed, int exchanges, int threads, List<ClientFault> clientFaults,
        List<UpstreamFault> upstreamFaults, boolean restart, List<StoreFault> storeFaults) {

    /** The wire torture: no store faults, whatever {@code torture.store-faults} says. */
    static TortureSettings fromSystemProperties() {
        return wire(System.getProperty("torture.faults", ""));
    }

    /** The store torture: the wire knobs, plus the store faults ({@code torture.store-faults}, all by default). */
    static TortureSettings storeFromSystemProperties() {
        Set<String> picked = labels(System.getProperty("torture.store-faults", ""));
        List<StoreFault> store = Arrays.stream(StoreFault.values())
                .filter(f -> picked.isEmpty() || picked.contains(f.label)).toList();
        Set<String> known = Arrays.stream(StoreFault.values()).map(f -> f.label).collect(Collectors.toCollection(
                TreeSet::new));
        picked.stream().filter(p -> !known.contains(p)).findAny().ifPresent(p -> {
            throw new IllegalArgumentException("torture.store-faults: unknown fault " + p + "; known: " + known);
        });
        TortureSettings wire = fromSystemProperties();
        return new TortureSettings(wire.seed, wire.exchanges, wire.threads, wire.clientFaults, wire.upstreamFaults,
                wire.restart, store);
    }

    private static Set<String> labels(String list) {
        return Arrays.stream(list.split(",")).map(String::trim).filter(s -> !s.isEmpty())
                .collect(Collectors.toSet());
    }

    private static TortureSettings wire(String faults) {
        String seed = System.getProperty("torture.seed", "");
        Set<String> picked = labels(faults);
        List<ClientFault> client = Arrays.stream(ClientFault.values())
                .filter(f -> picked.isEmpty() || picked.contains(f.label)).toList();
        List<UpstreamFault> upstream = Arrays.stream(UpstreamFault.values())
                .filter(f -> picked.isEmpty() || picked.contains(f.label)).toList();
        Set<String> known = new TreeSet<>();
        Arrays.stream(ClientFault.values()).forEach(f -> known.add(f.label));
        Arrays.stream(UpstreamFault.values()).forEach(f -> known.add(f.label));
        picked.stream().filter(p -> !known.contains(p)).findAny().ifPresent(p -> {
            throw new IllegalArgumentException("torture.faults: unknown fault " + p + "; known: " + known);
        });
        return new TortureSettings(
                seed.isBlank() ? System.nanoTime() : Long.parseLong(seed.trim()),
                Integer.getInteger("torture.exchanges", 1_000),
                Integer.getInteger("torture.threads", 12),
                client.isEmpty() ? List.of(ClientFault.CLEAN) : client,
                upstream.isEmpty() ? List.of(UpstreamFault.NORMAL) : upstream,
                Boolean.getBoolean("torture.restart"),
                List.of());
    }

    boolean storeFaulted() {
        return !storeFaults.isEmpty();
    }

    String replayCommand() {
        return "-Dtorture.seed=" + seed + " -Dtorture.exchanges=" + exchanges + " -Dtorture.threads=" + threads
                + (restart ? " -Dtorture.restart=true" : "")
                + (clientFaults.size() == ClientFault.values().length
                        && upstreamFaults.size() == UpstreamFault.values().length ? ""
                        : " -Dtorture.faults=" + labels())
                + (storeFaults.isEmpty() || storeFaults.size() == StoreFault.values().length ? ""
                        : " -Dtorture.store-faults=" + String.join(",", storeFaults.stream().map(f -> f.label)
                                .toList()));
    }

    private String labels() {
        return String.join(",", clientFaults.stream().map(f -> f.label).toList()) + ","
                + String.join(",", upstreamFaults.stream().map(f -> f.label).toList());
    }

}
