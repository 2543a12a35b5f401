package dev.retrysafe.gateway.support;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A real Redis Cluster of three masters, started from the {@code redis-server} and {@code redis-cli} on the PATH
 * (Redis's own cluster mode, nothing home-made), each in its own folder under {@code target/}.
 */
public final class LocalRedisCluster implements AutoCloseable {
    /** Redis's cluster bus listens on the client port plus this. */
    static final int BUS_PORT_OFFSET = 10000;
    private final List<Integer> ports = new ArrayList<>();
    private final List<Process> servers = new ArrayList<>();
    private final List<Path> directories = new ArrayList<>();
    private final int masterCount;
    private final int replicasPerMaster;

    public static boolean available() {
        return onPath("redis-server") && onPath("redis-cli");
    }

    public LocalRedisCluster(int masters) throws IOException, InterruptedException {
        this(masters, 0);
    }

    /** {@code replicasPerMaster} replicas each; a short node timeout so that failovers take seconds. */
    public LocalRedisCluster(int masters, int replicasPerMaster) throws IOException, InterruptedException {
        this.masterCount = masters;
        this.replicasPerMaster = replicasPerMaster;
        Path root = Files.createDirectories(Path.of("target/redis-cluster-" + System.nanoTime()));
        for (int i = 0; i < masters * (1 + replicasPerMaster); i++) {
            int port = nodePort(ports);
            Path dir = Files.createDirectories(root.resolve(Integer.toString(port)));
            directories.add(dir);
            servers.add(node(port, dir));
            ports.add(port);
        }
        for (int port : ports) {
            awaitListening(port);
        }
        List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        ports.forEach(p -> create.add("127.0.0.1:" + p));
        create.addAll(List.of("--cluster-replicas", Integer.toString(replicasPerMaster), "--cluster-yes"));
        run(create, root.resolve("create.log").toFile());
        for (int port : ports) {
            awaitClusterOk(port);
        }
        // A replica that has not finished its first sync cannot be promoted: wait for every link to be up.
        awaitReplicasLinked();
    }

    private static Process node(int port, Path dir) throws IOException {
        return new ProcessBuilder("redis-server", "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--save", "",
                "--appendonly", "no", "--cluster-node-timeout", "1000", "--dir", dir.toAbsolutePath().toString())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(
                        dir.resolve("redis.log").toFile())).start();
    }

    /**
     * Starts a killed node again on its port and folder: empty (no persistence), with its {@code nodes.conf}, so it
     * rejoins the cluster, learns that its replica took its slots, and becomes that replica's replica.
     */
    public void restart(int port) throws IOException {
        int index = ports.indexOf(port);
        servers.set(index, node(port, directories.get(index)));
        awaitListening(port);
    }

    /** The ports of the nodes that say they are masters (dead nodes say nothing). */
    public List<Integer> masters() throws IOException, InterruptedException {
        List<Integer> masters = new ArrayList<>();
        for (int port : ports) {
            if (servers.get(ports.indexOf(port)).isAlive()
                    && cli(port, "info", "replication").contains("role:master")) {
                masters.add(port);
            }
        }
        return masters;
    }

    /** The port of a live replica of the master on {@code masterPort}, as the replicas' INFO says. */
    public int replicaOf(int masterPort) throws IOException, InterruptedException {
        for (int port : ports) {
            if (servers.get(ports.indexOf(port)).isAlive()
                    && cli(port, "info", "replication").lines().anyMatch(("master_port:" + masterPort)::equals)) {
                return port;
            }
        }
        throw new IllegalStateException("No replica of " + masterPort);
    }

    /** Waits (bounded) until the node on {@code port} reports {@code line} in its INFO replication. */
    public static void awaitReplication(int port, String line) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!info(port, "replication").lines().anyMatch(line::equals)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("redis-server on " + port + " never reported " + line);
            }
            RespProbe.pollAgain();
        }
    }

    /**
     * Waits (bounded) until the cluster has its shape back: every node up, as many masters as it was made with, each
     * with its replicas, and every replica's link to its master up. Not "this node is a replica now": with a 1 s node
     * timeout a loaded machine can fail a node over again (back, or elsewhere) while a test waits, and a wait for one
     * node's role then never ends although the cluster is whole.
     */
    public void awaitReplicasLinked() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String shape;
        while ((shape = misshapen()) != null) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("The cluster never had its " + masterCount + " masters with "
                        + replicasPerMaster + " linked replica(s) each: " + shape);
            }
            RespProbe.pollAgain();
        }
    }

    /** What keeps the cluster from its shape, or null when it has it. */
    private String misshapen() throws IOException {
        List<String> roles = new ArrayList<>();
        int masters = 0;
        boolean whole = true;
        for (int i = 0; i < ports.size(); i++) {
            int port = ports.get(i);
            String info = servers.get(i).isAlive() ? info(port, "replication") : "";
            String role = line(info, "role:");
            if (role.equals("role:master")) {
                masters++;
                whole &= number(line(info, "connected_slaves:")) >= replicasPerMaster;
            } else if (role.equals("role:slave")) {
                whole &= info.lines().anyMatch("master_link_status:up"::equals);
            } else {
                whole = false;
            }
            roles.add(port + " " + (role.isEmpty() ? "down" : role) + " " + line(info, "connected_slaves:")
                    + line(info, "master_link_status:"));
        }
        return whole && masters == masterCount ? null : String.join(", ", roles);
    }

    private static String line(String info, String prefix) {
        return info.lines().filter(l -> l.startsWith(prefix)).findFirst().orElse("");
    }

    private static int number(String line) {
        return line.isEmpty() ? 0 : Integer.parseInt(line.substring(line.indexOf(':') + 1).trim());
    }

    /** One section of the node's INFO, over a socket of its own ({@link RespProbe}); empty when it does not answer. */
    public static String info(int port, String section) {
        return RespProbe.text(port, "INFO", section);
    }

    /** Waits (bounded) until every live node reports the cluster healthy. */
    public void awaitHealthy() throws IOException, InterruptedException {
        for (int i = 0; i < ports.size(); i++) {
            if (servers.get(i).isAlive()) {
                awaitClusterOk(ports.get(i));
            }
        }
    }

    public String nodes() {
        return ports.stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
    }

    public List<Integer> ports() {
        return ports;
    }

    /** A started Lettuce connection factory on this cluster; the caller destroys it. */
    public LettuceConnectionFactory connect() {
        LettuceConnectionFactory connections = new LettuceConnectionFactory(
                new RedisClusterConfiguration(List.of(nodes().split(","))));
        connections.afterPropertiesSet();
        connections.start();
        return connections;
    }

    /** Runs a redis-cli command against one node (no redirects followed) and returns its output. */
    public static String cli(int port, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("redis-cli", "-p", Integer.toString(port)));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        process.waitFor(30, TimeUnit.SECONDS);
        return out;
    }

    /** Kills the node on {@code port} with SIGKILL, as a crashed machine would go. */
    public void kill(int port) throws InterruptedException {
        Process node = servers.get(ports.indexOf(port));
        node.destroyForcibly();
        node.waitFor(10, TimeUnit.SECONDS);
    }

    /** Waits (bounded) until a live node reports the cluster healthy again. */
    public void awaitHealthy(int livePort) throws IOException, InterruptedException {
        awaitClusterOk(livePort);
    }

    /** The port of the master that owns the key's slot. */
    public int ownerOf(String key) throws IOException, InterruptedException {
        for (int port : ports) {
            String reply = cli(port, "exists", key);
            if (!reply.contains("MOVED") && !reply.contains("refused") && !reply.contains("Could not connect")) {
                return port;
            }
        }
        throw new IllegalStateException("No owner for " + key);
    }

    /**
     * Moves the slot of {@code key} to the master on {@code targetPort} with Redis's own resharding steps (IMPORTING,
     * MIGRATING, MIGRATE, SETSLOT NODE), while clients keep running.
     */
    public void moveSlotOf(String key, int targetPort) throws IOException, InterruptedException {
        moveSlotOf(key, targetPort, null);
    }

    /**
     * As {@link #moveSlotOf(String, int)} (which tells the masters in port order), but the source master is told the
     * new owner first and {@code betweenMasters} (unless null) runs before the others are: the moment in which the
     * source answers MOVED to the target and the target, still importing, MOVED back.
     */
    public void moveSlotOf(String key, int targetPort, BetweenMasters betweenMasters)
            throws IOException, InterruptedException {
        int source = ownerOf(key);
        String slot = cli(source, "cluster", "keyslot", key);
        String sourceId = cli(source, "cluster", "myid");
        String targetId = cli(targetPort, "cluster", "myid");
        cli(targetPort, "cluster", "setslot", slot, "importing", sourceId);
        cli(source, "cluster", "setslot", slot, "migrating", targetId);
        for (String moving : cli(source, "cluster", "getkeysinslot", slot, "1000").split("\\s+")) {
            if (!moving.isBlank()) {
                cli(source, "migrate", "127.0.0.1", Integer.toString(targetPort), moving, "0", "5000");
            }
        }
        if (betweenMasters == null) {
            for (int port : ports) {
                cli(port, "cluster", "setslot", slot, "node", targetId);
            }
            return;
        }
        cli(source, "cluster", "setslot", slot, "node", targetId);
        betweenMasters.run();
        for (int port : ports) {
            if (port != source) {
                cli(port, "cluster", "setslot", slot, "node", targetId);
            }
        }
    }

    /** What a test does while only the source master knows a slot's new owner. */
    @FunctionalInterface
    public interface BetweenMasters {
        void run() throws IOException, InterruptedException;
    }

    /** A counter of one command in a node's INFO commandstats, e.g. ssubscribe's {@code rejected_calls}; 0 if unused. */
    public static long commandStat(int port, String command, String field) throws IOException, InterruptedException {
        String prefix = "cmdstat_" + command + ":";
        return cli(port, "info", "commandstats").lines().filter(line -> line.startsWith(prefix))
                .flatMap(line -> Arrays.stream(line.substring(prefix.length()).split(",")))
                .filter(pair -> pair.startsWith(field + "="))
                .mapToLong(pair -> Long.parseLong(pair.substring(field.length() + 1).trim())).sum();
    }

    private static void awaitClusterOk(int port) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (RespProbe.text(port, "CLUSTER", "INFO").contains("cluster_state:ok")) {
                return;
            }
            RespProbe.pollAgain();
        }
        throw new IllegalStateException("Cluster node " + port + " never reached cluster_state:ok");
    }

    private static void run(List<String> command, File log) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log).start();
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed; see " + log);
        }
    }

    public static void awaitListening(int port) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            try (Socket socket = new Socket("127.0.0.1", port)) {
                return;
            } catch (IOException notYet) {
                pauseBeforeRetry();
            }
        }
        throw new IllegalStateException("redis-server on " + port + " did not start");
    }

    // A connect loop with no pause takes a core from the Redis it waits for on a 2-core machine.
    private static void pauseBeforeRetry() {
        try {
            RespProbe.pollAgain();
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while waiting for a redis-server to listen", interrupted);
        }
    }

    public static boolean onPath(String command) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String dir : path.split(File.pathSeparator)) {
            if (new File(dir, command).canExecute()) {
                return true;
            }
        }
        return false;
    }

    /**
     * A free port for a cluster node whose bus port (Redis's port + 10000) is free as well, and neither of which is
     * the port or bus port of a node already chosen: two free ports 10000 apart once made one node's bus the next
     * node's client port, and that node's start failed with "Address already in use" (CI of 860ac56). Both lie below
     * the ephemeral range ({@link #restartablePort}): nodes are killed and started again on their ports.
     */
    static int nodePort(List<Integer> chosen) throws IOException {
        return nodePort(chosen, LocalRedisCluster::restartablePort);
    }

    /** As {@link #nodePort(List)}, with the candidates from {@code candidates} (a test's own sequence). */
    static int nodePort(List<Integer> chosen, PortSource candidates) throws IOException {
        for (int attempt = 0; attempt < 1000; attempt++) {
            int port = candidates.next();
            int bus = port + BUS_PORT_OFFSET;
            // Equal ports mean equal bus ports: three comparisons cover all four pairs.
            boolean clashes = chosen.stream().anyMatch(other -> other == port || other == bus
                    || other + BUS_PORT_OFFSET == port);
            if (bus <= 65535 && !clashes && bindable(bus)) {
                return port;
            }
        }
        throw new IllegalStateException("No free port pair (port, port + " + BUS_PORT_OFFSET + ") for a cluster node");
    }

    @FunctionalInterface
    interface PortSource {
        int next() throws IOException;
    }

    private static boolean bindable(int port) {
        try (ServerSocket socket = new ServerSocket(port, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            return true;
        } catch (IOException taken) {
            return false;
        }
    }

    /**
     * A free port for a node a test kills and starts again on the same port, below the kernel's ephemeral range
     * ({@code ip_local_port_range}) with room for a cluster bus port (+10000) below it too. While such a node is down,
     * a port in that range can be handed to any outgoing connection as its local port, and the restart then fails
     * with "Address already in use"; the test polls Redis and Sentinel on new connections, so it makes many. Falls
     * back to {@link #freePort} on a machine whose range leaves no such room.
     */
    public static int restartablePort() throws IOException {
        int top = ephemeralRangeStart() - BUS_PORT_OFFSET;
        int bottom = 10_000;
        for (int attempt = 0; top - bottom >= 1000 && attempt < 1000; attempt++) {
            int port = bottom + ThreadLocalRandom.current().nextInt(top - bottom);
            if (bindable(port)) {
                return port;
            }
        }
        return freePort();
    }

    /** The first port the kernel hands out to outgoing connections (Linux's default when it cannot be read). */
    static int ephemeralRangeStart() {
        try {
            // readAllLines, not readString: procfs reports a size of 0 and readString returned its first byte only.
            return Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).get(0)
                    .trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException unreadable) {
            return 32768;
        }
    }

    public static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    @Override
    public void close() {
        stopAll(servers);
    }

    public static void stopAll(List<Process> processes) {
        processes.forEach(Process::destroy);
        for (Process process : processes) {
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
