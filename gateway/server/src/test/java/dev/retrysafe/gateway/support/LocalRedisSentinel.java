package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.FreezableLink;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A master, one replica and three Sentinels, started from the {@code redis-server} on the PATH, with timeouts short
 * enough that a failover takes seconds.
 */
public final class LocalRedisSentinel implements AutoCloseable {
    public static final String MASTER_NAME = "mymaster";

    private final List<Process> processes = new ArrayList<>();
    private final int masterPort;
    private final List<Integer> replicaPorts = new ArrayList<>();
    private final List<Integer> sentinelPorts = new ArrayList<>();
    private final FreezableLink link;
    private Process master;

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
        Path root = Files.createDirectories(Path.of("target/redis-sentinel-" + System.nanoTime()));
        masterPort = LocalRedisCluster.freePort();
        master = server(root, masterPort);
        link = freezable ? new FreezableLink(masterPort) : null;
        int replicateFrom = freezable ? link.port() : masterPort;
        for (int i = 0; i < replicas; i++) {
            int port = LocalRedisCluster.freePort();
            server(root, port, "--replicaof", "127.0.0.1", Integer.toString(replicateFrom));
            replicaPorts.add(port);
        }
        // Sentinels learn the replicas from the master's INFO, refreshed every 10 s: started once the replicas are
        // attached, they see them at once.
        for (int port : replicaPorts) {
            awaitReplicaInSync(port);
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
            awaitEntries(port, "replicas", replicaPorts.size());
            awaitEntries(port, "sentinels", sentinelPorts.size() - 1);
        }
    }

    private static void awaitEntries(int sentinelPort, String what, int expected)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (LocalRedisCluster.cli(sentinelPort, "sentinel", what, MASTER_NAME).lines()
                .filter("name"::equals).count() < expected) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Sentinel on " + sentinelPort + " never saw " + expected + " " + what);
            }
            Thread.onSpinWait();
        }
    }

    public String sentinelNodes() {
        return sentinelPorts.stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
    }

    public int replicaPort() {
        return replicaPorts.get(0);
    }

    public List<Integer> replicaPorts() {
        return List.copyOf(replicaPorts);
    }

    /** Writes on the master reach no replica from now on (they are acknowledged to clients all the same). */
    public void freezeReplication() {
        link.freeze();
    }

    /** Kills the master with SIGKILL. */
    public void killMaster() throws InterruptedException {
        master.destroyForcibly();
        master.waitFor(10, TimeUnit.SECONDS);
        if (link != null) {
            link.close();
        }
    }

    private Process server(Path root, int port, String... extra) throws IOException {
        Path dir = Files.createDirectories(root.resolve("redis-" + port));
        List<String> command = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port),
                "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toAbsolutePath().toString()));
        command.addAll(List.of(extra));
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("redis.log").toFile()).start();
        processes.add(process);
        LocalRedisCluster.awaitListening(port);
        return process;
    }

    private static void awaitReplicaInSync(int replicaPort) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!LocalRedisCluster.cli(replicaPort, "info", "replication").contains("master_link_status:up")) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("The replica never synced");
            }
            Thread.onSpinWait();
        }
    }

    @Override
    public void close() {
        if (link != null) {
            link.close();
        }
        LocalRedisCluster.stopAll(processes);
    }
}
