package dev.retrysafe.gateway.faults.torture;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The run's knobs, from system properties so that a failure can be replayed: {@code torture.seed},
 * {@code torture.exchanges}, {@code torture.threads}, {@code torture.faults} (labels, comma-separated, client and
 * upstream ones mixed; none means all), {@code torture.routes} (labels of {@link RouteKind}, comma-separated; none
 * means all) and {@code torture.restart} (stop and start the gateway once mid-run). The
 * store torture adds {@code torture.store-faults} (labels of {@link StoreFault}, comma-separated; none means all
 * that apply to the topology): with store faults the gateway reaches its Redis through the store nemesis; and
 * {@code torture.store-topology} ({@link StoreTopology}: {@code standalone}, {@code sentinel}, {@code cluster}),
 * which picks the one store torture to run (unset: each runs, with its own topology).
 */
record TortureSettings(long seed, int exchanges, int threads, List<ClientFault> clientFaults,
        List<UpstreamFault> upstreamFaults, List<RouteKind> routes, boolean restart, List<StoreFault> storeFaults,
        StoreTopology topology) {
    /**
     * A failover takes seconds (a Sentinel manual failover's loss window up to 18 s): unless told otherwise, the
     * failover runs send fewer exchanges on fewer client threads, so that they last about a minute and meet several
     * failovers, most of the run outside their loss windows.
     */
    static final int FAILOVER_EXCHANGES = 400;
    static final int FAILOVER_THREADS = 3;

    /** The wire torture: no store faults, whatever {@code torture.store-faults} says. */
    static TortureSettings fromSystemProperties() {
        return wire(System.getProperty("torture.faults", ""), 1_000, 12);
    }

    /** Whether {@code torture.store-topology} leaves this topology's store torture to run (unset: every one runs). */
    static boolean topologyPicked(StoreTopology topology) {
        String picked = System.getProperty("torture.store-topology", "");
        return picked.isBlank() || StoreTopology.ofLabel(picked) == topology;
    }

    /**
     * The store torture on {@code topology}: the wire knobs, plus the store faults ({@code torture.store-faults}:
     * those of the list that apply to the topology, all of them by default; none may be left).
     */
    static TortureSettings storeFromSystemProperties(StoreTopology topology) {
        Set<String> picked = labels(System.getProperty("torture.store-faults", ""));
        List<StoreFault> store = topology.faults().stream()
                .filter(f -> picked.isEmpty() || picked.contains(f.label)).toList();
        Set<String> known = Arrays.stream(StoreFault.values()).map(f -> f.label).collect(Collectors.toCollection(
                TreeSet::new));
        picked.stream().filter(p -> !known.contains(p)).findAny().ifPresent(p -> {
            throw new IllegalArgumentException("torture.store-faults: unknown fault " + p + "; known: " + known);
        });
        boolean standalone = topology == StoreTopology.STANDALONE;
        TortureSettings wire = wire(System.getProperty("torture.faults", ""),
                standalone ? 1_000 : FAILOVER_EXCHANGES, standalone ? 12 : FAILOVER_THREADS);
        return new TortureSettings(wire.seed, wire.exchanges, wire.threads, wire.clientFaults, wire.upstreamFaults,
                wire.routes, wire.restart, store, topology);
    }

    private static Set<String> labels(String list) {
        return Arrays.stream(list.split(",")).map(String::trim).filter(s -> !s.isEmpty())
                .collect(Collectors.toSet());
    }

    private static TortureSettings wire(String faults, int defaultExchanges, int defaultThreads) {
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
        Set<String> pickedRoutes = labels(System.getProperty("torture.routes", ""));
        List<RouteKind> routes = Arrays.stream(RouteKind.values())
                .filter(r -> pickedRoutes.isEmpty() || pickedRoutes.contains(r.label)).toList();
        if (routes.size() < pickedRoutes.size()) {
            throw new IllegalArgumentException("torture.routes: unknown route kind in " + pickedRoutes + "; known: "
                    + Arrays.stream(RouteKind.values()).map(r -> r.label).toList());
        }
        return new TortureSettings(
                seed.isBlank() ? System.nanoTime() : Long.parseLong(seed.trim()),
                Integer.getInteger("torture.exchanges", defaultExchanges),
                Integer.getInteger("torture.threads", defaultThreads),
                client.isEmpty() ? List.of(ClientFault.CLEAN) : client,
                upstream.isEmpty() ? List.of(UpstreamFault.NORMAL) : upstream,
                routes,
                Boolean.getBoolean("torture.restart"),
                List.of(),
                StoreTopology.STANDALONE);
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
                + (routes.size() == RouteKind.values().length ? ""
                        : " -Dtorture.routes=" + String.join(",", routes.stream().map(r -> r.label).toList()))
                + (storeFaults.isEmpty() ? "" : " -Dtorture.store-topology=" + topology.label)
                + (storeFaults.isEmpty() || storeFaults.size() == topology.faults().size() ? ""
                        : " -Dtorture.store-faults=" + String.join(",", storeFaults.stream().map(f -> f.label)
                                .toList()));
    }

    private String labels() {
        return String.join(",", clientFaults.stream().map(f -> f.label).toList()) + ","
                + String.join(",", upstreamFaults.stream().map(f -> f.label).toList());
    }

}
