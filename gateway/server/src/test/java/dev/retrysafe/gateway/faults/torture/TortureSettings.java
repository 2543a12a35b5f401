package dev.retrysafe.gateway.faults.torture;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The run's knobs, from system properties so that a failure can be replayed: {@code torture.seed},
 * {@code torture.exchanges}, {@code torture.threads}, {@code torture.faults} (labels, comma-separated, client and
 * upstream ones mixed; none means all) and {@code torture.restart} (stop and start the gateway once mid-run).
 */
record TortureSettings(long seed, int exchanges, int threads, List<ClientFault> clientFaults,
        List<UpstreamFault> upstreamFaults, boolean restart) {

    static TortureSettings fromSystemProperties() {
        String seed = System.getProperty("torture.seed", "");
        Set<String> picked = Arrays.stream(System.getProperty("torture.faults", "").split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
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
                Boolean.getBoolean("torture.restart"));
    }

    String replayCommand() {
        return "-Dtorture.seed=" + seed + " -Dtorture.exchanges=" + exchanges + " -Dtorture.threads=" + threads
                + (restart ? " -Dtorture.restart=true" : "")
                + (clientFaults.size() == ClientFault.values().length
                        && upstreamFaults.size() == UpstreamFault.values().length ? ""
                        : " -Dtorture.faults=" + labels());
    }

    private String labels() {
        return String.join(",", clientFaults.stream().map(f -> f.label).toList()) + ","
                + String.join(",", upstreamFaults.stream().map(f -> f.label).toList());
    }

}
