package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.reactive.function.client.WebClient;

/** Real gateway instances for the scale tests: one guarded route to the upstream, Redis as each test says. */
public final class Gateways {
    private Gateways() {
    }

    /** Starts a gateway on a random port with the Idempotency route {@code onboarding} on {@code /merchants/**}. */
    public static ConfigurableApplicationContext start(String upstreamUri, Map<String, String> redisAndMore) {
        return start(upstreamUri, redisAndMore, new ApplicationListener<?>[0]);
    }

    /** As above, with listeners of the application's own events (e.g. to capture the log once Boot has set it up). */
    public static ConfigurableApplicationContext start(String upstreamUri, Map<String, String> redisAndMore,
            ApplicationListener<?>... listeners) {
        return start(upstreamUri, "onboarding", Map.of(), redisAndMore, listeners);
    }

    /** The guarded route on {@code /merchants/**} with this id and these Idempotency args. */
    public static ConfigurableApplicationContext start(String upstreamUri, String routeId, Map<String, String> routeArgs,
            Map<String, String> redisAndMore, ApplicationListener<?>... listeners) {
        String prefix = "spring.cloud.gateway.server.webflux.routes[0].";
        Map<String, Object> properties = new HashMap<>(redisAndMore);
        routeArgs.forEach((arg, value) -> properties.put(prefix + "filters[0].args." + arg, value));
        properties.put("server.port", "0");
        properties.put(prefix + "id", routeId);
        properties.put(prefix + "uri", upstreamUri);
        properties.put(prefix + "predicates[0]", "Path=/merchants/**");
        properties.put(prefix + "filters[0].name", "Idempotency");
        return new SpringApplicationBuilder(IdempotencyGatewayApplication.class).properties(properties)
                .listeners(listeners).run();
    }

    public static WebClient client(ConfigurableApplicationContext gateway) {
        return WebClient.create("http://127.0.0.1:"
                + gateway.getEnvironment().getRequiredProperty("local.server.port", Integer.class));
    }

    /** Closes what was started, in reverse order, skipping what never started (a skipped test). */
    public static void closeAll(AutoCloseable... started) throws Exception {
        for (AutoCloseable closeable : started) {
            if (closeable != null) {
                closeable.close();
            }
        }
    }
}
