package dev.retrysafe.minimal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.event.ApplicationContextInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import redis.embedded.RedisServer;

/**
 * The keep-alive read-stall workaround comes with the library: a bare gateway that has no code of its own for it
 * has the system property Reactor Netty reads set before any of its beans (its HTTP server among them) exists. The
 * application's own value, in its configuration or as a system property, wins.
 */
class KeepAliveReadStallTest {
    static final String PROPERTY = "reactor.netty.http.server.lastFlushWhenNoRead";
    static final RedisServer redis = LocalRedis.start();
    private String before;

    @BeforeEach
    void remember() {
        before = System.getProperty(PROPERTY);
        System.clearProperty(PROPERTY);
    }

    @AfterEach
    void restore() {
        if (before == null) {
            System.clearProperty(PROPERTY);
        } else {
            System.setProperty(PROPERTY, before);
        }
    }

    @AfterAll
    static void stop() throws IOException {
        redis.stop();
    }

    @Test
    void aGatewayWithTheLibraryHasItBeforeItsServerExists() {
        SeenBeforeAnyBean seen = new SeenBeforeAnyBean();
        try (ConfigurableApplicationContext gateway = start(seen)) {
            assertThat(seen.values).containsExactly("true");
            assertThat(System.getProperty(PROPERTY)).isEqualTo("true");
        }
    }

    @Test
    void theApplicationsOwnConfigurationWins() {
        SeenBeforeAnyBean seen = new SeenBeforeAnyBean();
        try (ConfigurableApplicationContext gateway = start(seen, "--" + PROPERTY + "=false")) {
            assertThat(seen.values).containsExactly("false");
        }
    }

    @Test
    void aSystemPropertyTheApplicationWasStartedWithWins() {
        System.setProperty(PROPERTY, "false");
        SeenBeforeAnyBean seen = new SeenBeforeAnyBean();
        try (ConfigurableApplicationContext gateway = start(seen)) {
            assertThat(seen.values).containsExactly("false");
        }
    }

    private static ConfigurableApplicationContext start(SeenBeforeAnyBean seen, String... args) {
        SpringApplication application = new SpringApplication(MinimalGatewayApplication.class);
        application.addListeners(seen);
        List<String> all = new ArrayList<>(List.of(args));
        all.add("--server.port=0");
        all.add("--spring.data.redis.port=" + redis.ports().get(0));
        return application.run(all.toArray(String[]::new));
    }

    /** The property as it stands once the context exists and before its bean definitions are even loaded. */
    static final class SeenBeforeAnyBean implements ApplicationListener<ApplicationContextInitializedEvent> {
        final List<String> values = new ArrayList<>();

        @Override
        public void onApplicationEvent(ApplicationContextInitializedEvent event) {
            values.add(System.getProperty(PROPERTY));
        }
    }
}
