package dev.retrysafe.gateway.scale;

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
final class LocalRedisSentinel implements AutoCloseable {
    static final String MASTER_NAME = "mymaster";

    private final List<Process> processes = new ArrayList<>();
    private final int masterPort;
    private final int replicaPort;
    private final List<Integer> sentinelPorts = new ArrayList<>();
    private Process master;

    LocalRedisSentinel() throws IOException, InterruptedException {
        Path root = Files.createDirectories(Path.of("target/redis-sentinel-" + System.nanoTime()));
        masterPort = LocalRedisCluster.freePort();
        replicaPort = LocalRedisCluster.freePort();
        master = server(root, masterPort);
        server(root, replicaPort, "--replicaof", "127.0.0.1", Integer.toString(masterPort));
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
                    "sentinel failover-timeout " + MASTER_NAME + " 5000",
                    "sentinel parallel-syncs " + MASTER_NAME + " 1", ""));
            processes.add(new ProcessBuilder("redis-server", conf.toAbsolutePath().toString(), "--sentinel")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("sentinel.log").toFile()).start());
            sentinelPorts.add(port);
        }
        for (int port : sentinelPorts) {
            LocalRedisCluster.awaitListening(port);
        }
        awaitReplicaInSync();
    }

    String sentinelNodes() {
        return sentinelPorts.stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
    }

    int replicaPort() {
        return replicaPort;
    }

    /** Kills the master with SIGKILL. */
    void killMaster() throws InterruptedException {
        master.destroyForcibly();
        master.waitFor(10, TimeUnit.SECONDS);
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

    private void awaitReplicaInSync() throws IOException, InterruptedException {
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
        LocalRedisCluster.stopAll(processes);
    }
}
