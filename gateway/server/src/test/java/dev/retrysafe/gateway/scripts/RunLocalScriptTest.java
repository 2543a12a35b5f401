package dev.retrysafe.gateway.scripts;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * run-local.sh refuses to start when one of its ports is taken, naming the port, instead of announcing "ready" for
 * whatever program answers there. (Its other promises need a full build and start; see docs/getting-started.md.)
 */
class RunLocalScriptTest {
    static final Path SCRIPT = Path.of("../../run-local.sh").toAbsolutePath().normalize();

    @Test
    void aTakenPortIsNamedAndNothingIsBuiltOrStarted() throws Exception {
        try (ServerSocket gatewayPort = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             ServerSocket managementPort = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            int free = freePort();
            Result result = run(Map.of("GATEWAY_PORT", Integer.toString(gatewayPort.getLocalPort()),
                    "BACKEND_PORT", Integer.toString(free),
                    "MANAGEMENT_PORT", Integer.toString(managementPort.getLocalPort())));
            assertThat(result.exitCode()).isEqualTo(1);
            assertThat(result.output())
                    .contains("port " + gatewayPort.getLocalPort() + " (GATEWAY_PORT) is taken")
                    .contains("port " + managementPort.getLocalPort() + " (MANAGEMENT_PORT) is taken")
                    .doesNotContain("port " + free + " ")
                    .doesNotContain("Building")
                    .doesNotContain("ready");
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private record Result(int exitCode, String output) {
    }

    private static Result run(Map<String, String> environment) throws Exception {
        ProcessBuilder builder = new ProcessBuilder("bash", SCRIPT.toString()).redirectErrorStream(true);
        builder.environment().putAll(environment);
        Process process = builder.start();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            throw new AssertionError("run-local.sh did not stop on a taken port within 30 s (it went on to build?)");
        }
        return new Result(process.exitValue(), new String(process.getInputStream().readAllBytes(),
                StandardCharsets.UTF_8));
    }
}
