package dev.retrysafe.gateway.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.test.context.DynamicPropertyRegistry;

/** Gateway routes for test contexts, declared as the YAML would, and a port nothing listens on. */
public final class TestRoutes {
    private TestRoutes() {
    }

    /** A route; with {@code args} (possibly empty) it has the {@code Idempotency} filter, with null none. */
    public static void route(DynamicPropertyRegistry registry, int index, String id, String uri, String path,
            Map<String, String> args) {
        String prefix = "spring.cloud.gateway.server.webflux.routes[" + index + "].";
        registry.add(prefix + "id", () -> id);
        registry.add(prefix + "uri", () -> uri);
        registry.add(prefix + "predicates[0]", () -> "Path=" + path);
        if (args != null) {
            registry.add(prefix + "filters[0].name", () -> "Idempotency");
            new LinkedHashMap<>(args).forEach((name, value) -> registry.add(prefix + "filters[0].args." + name, () -> value));
        }
    }

    /** A free port, closed again: connections to it are refused. */
    public static int closedPort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
