package dev.retrysafe.loadtests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * run-local.sh with the jars the build just made (this module runs after the server is packaged): it says ready only
 * once the gateway answers as healthy, hands its own arguments to the gateway, and stops the gateway and the backend
 * when it is stopped. (Its refusal of taken ports: the server module's RunLocalScriptTest.)
 */
class RunLocalScriptIntegrationTest {
    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    static final String READY = "Idempotency gateway ready";

    @Test
    void readyMeansHealthyArgumentsReachTheGatewayAndAStopStopsBoth() throws Exception {
        Assumptions.assumeTrue(Files.isDirectory(ROOT.resolve("gateway/server/target")),
                "the server is not packaged (run through the reactor build)");
        int management = freePort();
        Path log = Path.of("target", "run-local-script-test.log").toAbsolutePath();
        Files.createDirectories(log.getParent());
        ProcessBuilder builder = new ProcessBuilder("bash", ROOT.resolve("run-local.sh").toString(),
                "--spring.application.name=run-local-args-reached-the-gateway")
                .directory(ROOT.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().putAll(Map.of("SKIP_BUILD", "1", "GATEWAY_PORT", Integer.toString(freePort()),
                "BACKEND_PORT", Integer.toString(freePort()), "MANAGEMENT_PORT", Integer.toString(management)));
        Process script = builder.start();
        List<ProcessHandle> children = List.of();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(200);
            while (!Files.readString(log).contains(READY) && script.isAlive() && System.nanoTime() < deadline) {
                script.waitFor(500, TimeUnit.MILLISECONDS); // polls the log; returns at once if the script ends
            }
            assertThat(Files.readString(log)).as("said ready").contains(READY);
            // Ready was said: the gateway's health answers UP right now, on the management port it was given.
            assertThat(health(management)).contains("\"status\":\"UP\"");
            assertThat(Files.readString(log)).contains("[run-local-args-reached-the-gateway]");
            children = script.children().toList();
            assertThat(children).as("the gateway and the backend").hasSize(2);

            script.destroy(); // SIGTERM: the trap Ctrl-C also runs
            assertThat(script.waitFor(90, TimeUnit.SECONDS)).as("the script stopped").isTrue();
            for (ProcessHandle child : children) {
                child.onExit().get(90, TimeUnit.SECONDS);
                assertThat(child.isAlive()).isFalse();
            }
            assertThat(Files.readString(log)).contains("Stopping the gateway and the backend");
        } finally {
            children.forEach(ProcessHandle::destroyForcibly);
            script.descendants().forEach(ProcessHandle::destroyForcibly);
            script.destroyForcibly();
        }
    }

    private static String health(int port) throws IOException, InterruptedException {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/actuator/health")).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
