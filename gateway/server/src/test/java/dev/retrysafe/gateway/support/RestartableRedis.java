package dev.retrysafe.gateway.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One {@code redis-server} from the PATH that can be killed (SIGKILL, as a crashed host goes) and started again on the
 * same port and folder. {@link #persistent} writes every command to its AOF before answering
 * ({@code appendfsync always}), so a restart keeps every write a client saw acknowledged; {@link #forgetting} keeps
 * nothing, as a cache-style Redis restarted without persistence would.
 */
public final class RestartableRedis implements AutoCloseable {
    private final int port;
    private final Path directory;
    private final boolean persistent;
    private Process process;

    private RestartableRedis(boolean persistent) throws IOException {
        this.persistent = persistent;
        port = LocalRedisCluster.restartablePort(); // started again on it
        directory = Files.createDirectories(Path.of("target/redis-restartable-" + System.nanoTime())).toAbsolutePath();
        start();
    }

    /** AOF with {@code appendfsync always}: what a client saw acknowledged survives a kill. */
    public static RestartableRedis persistent() throws IOException {
        return new RestartableRedis(true);
    }

    /** No AOF, no RDB: a restart starts empty. */
    public static RestartableRedis forgetting() throws IOException {
        return new RestartableRedis(false);
    }

    public int port() {
        return port;
    }

    public boolean isPersistent() {
        return persistent;
    }

    /** Starts the server (again) and waits until it listens and has loaded its AOF. */
    public synchronized void start() throws IOException {
        if (process != null && process.isAlive()) {
            return;
        }
        List<String> command = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port),
                "--bind", "127.0.0.1", "--save", "", "--dir", directory.toString()));
        command.addAll(persistent ? List.of("--appendonly", "yes", "--appendfsync", "always")
                : List.of("--appendonly", "no"));
        process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("redis.log").toFile())).start();
        LocalRedisCluster.awaitListening(port);
        awaitLoaded();
    }

    /** A Redis still loading its AOF answers LOADING to every command: wait until it answers PING. */
    private void awaitLoaded() throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try {
            while (!LocalRedisCluster.cli(port, "ping").equals("PONG")) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("redis-server on " + port + " never answered PING");
                }
                Thread.onSpinWait();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    /**
     * SIGKILL: no shutdown save, no goodbye to clients; their connections are reset by the kernel. Returns (or throws
     * an interrupt that came meanwhile) only once the process has ended: a dying process still looks alive, and
     * {@link #start} would take it for a running Redis.
     */
    public synchronized void kill() throws InterruptedException {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        boolean interrupted = false;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (process.isAlive()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("redis-server on " + port + " outlived SIGKILL by 10 s");
            }
            try {
                process.waitFor(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            throw new InterruptedException("interrupted while redis-server on " + port + " was being killed");
        }
    }

    /** SIGKILL, then its AOF removed: the next {@link #start} begins empty, as a Redis without persistence would. */
    public synchronized void killAndForget() throws InterruptedException, IOException {
        kill();
        try (var files = Files.walk(directory)) {
            for (Path file : files.sorted(Comparator.reverseOrder()).toList()) {
                if (!file.equals(directory) && !file.getFileName().toString().equals("redis.log")) {
                    Files.delete(file);
                }
            }
        }
    }

    @Override
    public synchronized void close() {
        if (process != null) {
            LocalRedisCluster.stopAll(List.of(process));
        }
    }
}
