package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import java.io.File;
import java.io.IOException;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import reactor.core.publisher.Flux;

/**
 * A gateway in a JVM of its own (this test's classpath), so that a test can kill it with SIGKILL: nothing of it
 * runs afterwards, no shutdown hook, no last Redis call.
 */
public final class GatewayProcess implements AutoCloseable {
    private final Process process;
    private final int port;

    private GatewayProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** Starts it with {@code properties} as command-line arguments and waits (bounded) until it listens. */
    public static GatewayProcess start(String name, Map<String, String> properties) throws IOException {
        int port = LocalRedisCluster.freePort();
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), IdempotencyGatewayApplication.class.getName(),
                "--server.port=" + port, "--spring.main.banner-mode=off"));
        properties.forEach((key, value) -> command.add("--" + key + "=" + value));
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(new File("target/" + name + ".log"))
                .start();
        GatewayProcess gateway = new GatewayProcess(process, port);
        gateway.awaitListening(Duration.ofSeconds(90));
        return gateway;
    }

    public int port() {
        return port;
    }

    public String baseUrl() {
        return "http://127.0.0.1:" + port;
    }

    /** SIGKILL, and waits for the JVM to be gone; returns its exit value (137). */
    public int kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the gateway JVM did not die within 30 s of SIGKILL");
        }
        return process.exitValue();
    }

    private void awaitListening(Duration timeout) throws IOException {
        Flux.interval(Duration.ZERO, Duration.ofMillis(100)).onBackpressureDrop()
                .filter(tick -> !process.isAlive() || listening())
                .next().block(timeout);
        if (!process.isAlive()) {
            throw new IOException("the gateway JVM exited with " + process.exitValue() + " before listening");
        }
    }

    private boolean listening() {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            return true;
        } catch (IOException notYet) {
            return false;
        }
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}
