package dev.retrysafe.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retrysafe.gateway.support.Gateways;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The jar's own default, without {@code config/application.yml} (tests run from {@code gateway/}, where it is not
 * found): a separate management port is reachable on loopback only. 127.0.0.2 is a local address too (all of
 * 127/8 is), but not the one the port is bound to: a port bound to every interface would accept it.
 */
class ManagementAddressIntegrationTest {

    @Test
    void theManagementPortBindsLoopbackOnlyByDefault() throws Exception {
        try (ConfigurableApplicationContext gateway = start(Map.of())) {
            int port = managementPort(gateway);
            assertThat(accepts("127.0.0.1", port)).isTrue();
            assertThatThrownBy(() -> accepts("127.0.0.2", port)).isInstanceOf(ConnectException.class);
        }
    }

    @Test
    void managementServerAddressOverridesTheDefault() throws Exception {
        try (ConfigurableApplicationContext gateway = start(Map.of("management.server.address", "0.0.0.0"))) {
            assertThat(accepts("127.0.0.2", managementPort(gateway))).isTrue();
        }
    }

    @Test
    void aManagementPortSharedWithTheServerGetsNoAddress() {
        // Spring Boot refuses to start with an address for a management port that is not separate.
        try (ConfigurableApplicationContext gateway = Gateways.start("http://127.0.0.1:1", redis())) {
            assertThat(gateway.getEnvironment().containsProperty("management.server.address")).isFalse();
        }
    }

    private static ConfigurableApplicationContext start(Map<String, String> more) {
        Map<String, String> properties = new HashMap<>(more);
        properties.putAll(redis());
        properties.put("management.server.port", "0");
        return Gateways.start("http://127.0.0.1:1", properties);
    }

    private static Map<String, String> redis() {
        return Map.of("idempotency.embedded-redis.enabled", "true",
                "idempotency.embedded-redis.directory", "target/embedded-redis",
                "idempotency.record-counts.enabled", "false");
    }

    private static int managementPort(ConfigurableApplicationContext gateway) {
        return gateway.getEnvironment().getRequiredProperty("local.management.port", Integer.class);
    }

    private static boolean accepts(String address, int port) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getByName(address), port), 2000);
            return socket.isConnected();
        }
    }
}
