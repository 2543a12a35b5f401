package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.FreezableLink;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A master, one replica and three Sentinels, started from the {@code redis-server} on the PATH, with timeouts short
 * enough that a failover takes seconds. The master can be failed over again and again ({@link #failOver},
 * {@link #killMaster} then {@link #restartAsReplica}): which node is the master is asked of the Sentinels.
 */
public final class LocalRedisSentinel implements AutoCloseable {
    public static final String MASTER_NAME = "mymaster";

    private final List<Process> processes = new ArrayList<>();
    private final int masterPort;
    private final List<Integer> replicaPorts = new ArrayList<>();
    private final List<Integer> sentinelPorts = new ArrayList<>();
    private final FreezableLink link;
    private final Path root;
    /** The live process on each data node's port (master and replicas). */
    private final Map<Integer, Process> nodes = new HashMap<>();

    /** One replica, replicating straight from the master. */
    public LocalRedisSentinel() throws IOException, InterruptedException {
        this(1, false, 5000);
    }

    /**
     * Replicas that replicate through one {@link FreezableLink}, so a test can hold writes back from all of them.
     * Sentinel would point replicas it finds "misconfigured" (replicating from the link's address) back at the
     * master after its failover timeout: that timeout is a minute here, longer than any test.
     */
    public static LocalRedisSentinel withFreezableReplication(int replicas) throws IOException, InterruptedException {
        return new LocalRedisSentinel(replicas, true, 60_000);
    }

    private LocalRedisSentinel(int replicas, boolean freezable, int failoverTimeoutMillis)
            throws IOException, InterruptedException {
        root = Files.createDirectories(Path.of("target/redis-sentinel-" + System.nanoTime()));
        // Data nodes are killed and started again on their ports.
        masterPort = LocalRedisCluster.restartablePort();
        server(masterPort);
        link = freezable ? new FreezableLink(masterPort) : null;
        int replicateFrom = freezable ? link.port() : masterPort;
        for (int i = 0; i < replicas; i++) {
            int port = LocalRedisCluster.restartablePort();
            server(port, "--replicaof", "127.0.0.1", Integer.toString(replicateFrom));
            replicaPorts.add(port);
        }
        // Sentinels learn the replicas from the master's INFO, refreshed every 10 s: started once the replicas are
        // attached, they see them at once.
        for (int port : replicaPorts) {
            LocalRedisCluster.awaitReplication(port, "master_link_status:up");
        }
        for (int i = 0; i < 3; i++) {
            int port = LocalRedisCluster.freePort();
            Path dir = Files.createDirectories(root.resolve("sentinel-" + port));
            Path conf = dir.resolve("sentinel.conf");
            Files.writeString(conf, String.join("\n",
                    "port " + port,
                    "bind 127.0.0.1",
                    "dir " + dir.toAbsolutePath(),
                    "sentinel monitor " + MASTER_NAME + " 127.0.0.1 " + masterPort + " 2",
                    "sentinel down-after-milliseconds " + MASTER_NAME + " 1000",
                    "sentinel failover-timeout " + MASTER_NAME + " " + failoverTimeoutMillis,
                    "sentinel parallel-syncs " + MASTER_NAME + " 1", ""));
            processes.add(new ProcessBuilder("redis-server", conf.toAbsolutePath().toString(), "--sentinel")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("sentinel.log").toFile()).start());
            sentinelPorts.add(port);
        }
        for (int port : sentinelPorts) {
            LocalRedisCluster.awaitListening(port);
        }
        // A master killed before every Sentinel knows the replicas and the other Sentinels (hello messages every
        // 2 s) is never failed over: no replica to promote, or no majority to elect a leader.
        for (int port : sentinelPorts) {
            awaitEntries(port, "REPLICAS", replicaPorts.size());
            awaitEntries(port, "SENTINELS", sentinelPorts.size() - 1);
        }
    }

    private static void awaitEntries(int sentinelPort, String what, int expected)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (entries(sentinelPort, what).size() < expected) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Sentinel on " + sentinelPort + " never saw " + expected + " " + what);
            }
            RespProbe.pollAgain();
        }
    }

    /**
     * {@code SENTINEL REPLICAS|SENTINELS}: one map per entry, from the flat name/value list Sentinel answers; none
     * when the Sentinel does not answer.
     */
    private static List<Map<String, Object>> entries(int sentinelPort, String what) {
        List<Map<String, Object>> entries = new ArrayList<>();
        if (RespProbe.call(sentinelPort, "SENTINEL", what, MASTER_NAME) instanceof List<?> listed) {
            for (Object entry : listed) {
                if (entry instanceof List<?> pairs) {
                    Map<String, Object> fields = new HashMap<>();
                    for (int i = 0; i + 1 < pairs.size(); i += 2) {
                        fields.put(String.valueOf(pairs.get(i)), pairs.get(i + 1));
                    }
                    entries.add(fields);
                }
            }
        }
        return entries;
    }

    public String sentinelNodes() {
        return sentinelPorts.stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
    }

    public int replicaPort() {
        return replicaPorts.get(0);
    }

    /** A data node that is not the master now (the first replica, or the old master after a failover). */
    public int currentReplicaPort() throws IOException, InterruptedException {
        int master = masterPort();
        return nodes.keySet().stream().filter(port -> port != master).sorted().findFirst().orElseThrow();
    }

    public List<Integer> replicaPorts() {
        return List.copyOf(replicaPorts);
    }

    /** Writes on the master reach no replica from now on (they are acknowledged to clients all the same). */
    public void freezeReplication() {
        link.freeze();
    }

    /** Kills the master (the one the Sentinels name) with SIGKILL and returns its port. */
    public int killMaster() throws IOException, InterruptedException {
        int port = masterPort();
        Process master = nodes.get(port);
        master.destroyForcibly();
        master.waitFor(10, TimeUnit.SECONDS);
        if (link != null) {
            link.close();
        }
        return port;
    }

    /** The master's port, as every Sentinel names it (waits, bounded, while they disagree). */
    public int masterPort() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            List<Object> named = new ArrayList<>();
            for (int sentinel : sentinelPorts) {
                named.add(RespProbe.call(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME));
            }
            if (named.stream().distinct().count() == 1 && named.get(0) instanceof List<?> address
                    && address.size() == 2) {
                return Integer.parseInt(String.valueOf(address.get(1)));
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("The Sentinels never agreed on a master: " + named);
            }
            RespProbe.pollAgain();
        }
    }

    /**
     * {@code SENTINEL FAILOVER}: a Sentinel promotes a replica at once, without waiting for it to have every write,
     * then makes the old master its replica (what the old master took meanwhile is dropped). Returns once the
     * Sentinels name another master and the old one is a replica; retried while Sentinel refuses (a failover still
     * in progress, or no replica it trusts yet), for at most a minute.
     */
    public void failOver() throws IOException, InterruptedException {
        int old = startFailover();
        awaitMasterOtherThan(old);
        awaitOldMasterDemoted(old);
    }

    /**
     * {@code SENTINEL FAILOVER}, retried while Sentinel refuses (for at most a minute); returns the old master's port
     * as soon as Sentinel accepted, while the old master is still a master.
     */
    public int startFailover() throws IOException, InterruptedException {
        int old = masterPort();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Object reply;
        while (!"OK".equals(reply = RespProbe.call(sentinelPorts.get(0), "SENTINEL", "FAILOVER", MASTER_NAME))) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Sentinel never accepted a failover; its last answer: " + reply);
            }
            RespProbe.pollAgain();
        }
        return old;
    }

    /** Waits (bounded) until the old master of a failover reports itself a replica: Sentinel converted it. */
    public void awaitOldMasterDemoted(int old) throws IOException, InterruptedException {
        LocalRedisCluster.awaitReplication(old, "role:slave");
    }

    /** Whether the data node on {@code port} still reports itself a master. */
    public static boolean isMaster(int port) {
        return LocalRedisCluster.info(port, "replication").lines().anyMatch("role:master"::equals);
    }

    /** How many connections named {@code clientName} the data node on {@code port} has (CLIENT LIST). */
    public static long connectionsNamed(int port, String clientName) {
        return RespProbe.text(port, "CLIENT", "LIST").lines()
                .filter(line -> line.contains(" name=" + clientName + " ")).count();
    }

    /** Waits (bounded) until every Sentinel names a master other than {@code old} and that node says it is one. */
    public int awaitMasterOtherThan(int old) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            int now = masterPort();
            if (now != old && isMaster(now)) {
                return now;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("No master other than " + old + " was promoted");
            }
            RespProbe.pollAgain();
        }
    }

    /**
     * Starts a killed data node again on its port, empty (no persistence), as a replica of the current master: it
     * takes no write from its start.
     */
    public void restartAsReplica(int port) throws IOException, InterruptedException {
        server(port, "--replicaof", "127.0.0.1", Integer.toString(masterPort()));
    }

    /**
     * Waits (bounded) until every replica is in sync with the current master and every Sentinel sees it healthy:
     * then a next failover has a replica to promote. The master is asked again on every round: on a loaded machine
     * the Sentinels can fail over again while this waits, and a wait for the node that was a replica when it began
     * would never end. A timeout names each node's replication state and the end of its log (CI shows only the
     * message).
     */
    public void awaitReplicasReady() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String unready;
        while ((unready = unready()) != null) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("The replicas were never ready for a next failover within 60 s: "
                        + unready + "; " + nodesDescribed());
            }
            RespProbe.pollAgain();
        }
    }

    /** What keeps the replicas from being ready for a next failover, or null when nothing does. */
    private String unready() throws IOException, InterruptedException {
        int master = masterPort();
        for (int port : nodes.keySet()) {
            if (port != master && !info(port).lines().anyMatch("master_link_status:up"::equals)) {
                return "the node on " + port + " has no link up to the master on " + master;
            }
        }
        for (int sentinel : sentinelPorts) {
            List<Map<String, Object>> replicas = entries(sentinel, "REPLICAS");
            if (replicas.stream().filter(r -> "slave".equals(r.get("flags"))).count() < nodes.size() - 1) {
                return "Sentinel on " + sentinel + " does not see the replicas healthy (flags \"slave\"): "
                        + replicas.stream().map(r -> r.get("name") + " " + r.get("flags")).toList();
            }
        }
        return null;
    }

    private static String info(int port) {
        return LocalRedisCluster.info(port, "replication");
    }

    /** Each data node: its replication state and the last lines of its log. */
    private String nodesDescribed() {
        StringBuilder described = new StringBuilder();
        for (int port : nodes.keySet().stream().sorted().toList()) {
            String state = info(port).lines().filter(line -> line.startsWith("role:")
                    || line.startsWith("master_port:") || line.startsWith("master_link_status:")
                    || line.startsWith("master_sync_in_progress:") || line.startsWith("master_link_down_since")
                    || line.startsWith("connected_slaves:")).collect(Collectors.joining(","));
            described.append("node ").append(port).append(nodes.get(port).isAlive() ? "" : " (process ended)")
                    .append(" [").append(state.isEmpty() ? "no answer" : state).append("] log: ")
                    .append(logTail(port, 6)).append("; ");
        }
        return described.toString();
    }

    private String logTail(int port, int lines) {
        try {
            List<String> all = Files.readAllLines(root.resolve("redis-" + port).resolve("redis.log"));
            return String.join(" | ", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | RuntimeException unreadable) {
            return "(unreadable: " + unreadable + ")";
        }
    }

    private Process server(int port, String... extra) throws IOException {
        Path dir = Files.createDirectories(root.resolve("redis-" + port));
        List<String> command = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port),
                "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toAbsolutePath().toString()));
        command.addAll(List.of(extra));
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("redis.log").toFile()).start();
        processes.add(process);
        nodes.put(port, process);
        LocalRedisCluster.awaitListening(port);
        if (!process.isAlive()) {
            throw new IllegalStateException("redis-server on " + port + " ended at its start: " + logTail(port, 6));
        }
        return process;
    }

    @Override
    public void close() {
        if (link != null) {
            link.close();
        }
        LocalRedisCluster.stopAll(processes);
    }
}
