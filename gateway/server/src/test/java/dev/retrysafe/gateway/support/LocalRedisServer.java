package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.support.LocalRedisCluster;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One {@code redis-server} from the PATH on a free port, with the test's own settings (passwords, ACL users, TLS),
 * in a folder of its own under {@code target/}.
 */
public final class LocalRedisServer implements AutoCloseable {
    private final int port;
    private final Path directory;
    private final List<String> command;
    private Process process;

    /** @param portOption {@code --port}, or {@code --tls-port} for a TLS-only server */
    public LocalRedisServer(String portOption, String... settings) throws IOException {
        port = LocalRedisCluster.freePort();
        directory = Files.createDirectories(Path.of("target/redis-secured-" + System.nanoTime())).toAbsolutePath();
        command = new ArrayList<>(List.of("redis-server", "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", directory.toString()));
        if (portOption.equals("--tls-port")) {
            command.addAll(List.of("--port", "0"));
        }
        command.addAll(List.of(portOption, Integer.toString(port)));
        command.addAll(List.of(settings));
        launch();
    }

    private void launch() throws IOException {
        process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("redis.log").toFile())).start();
        awaitListening();
    }

    /** Stops it and starts it again on the same port with the same settings: without persistence, empty. */
    public void restart() throws IOException {
        LocalRedisCluster.stopAll(List.of(process));
        launch();
    }

    /** Listening, or a clear failure with Redis's own words when it refused the settings (no TLS support...). */
    private void awaitListening() throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            try (Socket socket = new Socket("127.0.0.1", port)) {
                return;
            } catch (IOException notYet) {
                if (!process.isAlive()) {
                    throw new IOException("redis-server exited: " + Files.readString(directory.resolve("redis.log")));
                }
                Thread.onSpinWait();
            }
        }
        throw new IOException("redis-server did not listen on " + port + " within 30 s");
    }

    public int port() {
        return port;
    }

    public Path directory() {
        return directory;
    }

    @Override
    public void close() {
        LocalRedisCluster.stopAll(List.of(process));
    }
}
