package dev.retrysafe.gateway;

import java.util.Map;
import org.springframework.boot.actuate.autoconfigure.web.server.ManagementPortType;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * The runnable gateway's separate management port (operator API, health, Prometheus) binds 127.0.0.1 unless
 * {@code management.server.address} says otherwise, with or without the shipped configuration file: Spring Boot's
 * own default is every interface. Added as the lowest-precedence property source when nothing sets it, so any
 * configuration wins; only for {@link IdempotencyGatewayApplication}, never for another application that uses this
 * module as a library.
 */
class LoopbackManagementAddress implements EnvironmentPostProcessor {
    static final String PROPERTY = "management.server.address";
    private static final String SOURCE = "idempotencyGatewayDefaults";

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        // Only for a port of its own: Spring Boot refuses an address for a management port shared with the server.
        // Checked rather than left to precedence: Spring Boot moves defaultProperties behind every other source later.
        if (application.getAllSources().contains(IdempotencyGatewayApplication.class)
                && ManagementPortType.get(environment) == ManagementPortType.DIFFERENT
                && !environment.containsProperty(PROPERTY)) {
            environment.getPropertySources().addLast(new MapPropertySource(SOURCE, Map.of(PROPERTY, "127.0.0.1")));
        }
    }
}
