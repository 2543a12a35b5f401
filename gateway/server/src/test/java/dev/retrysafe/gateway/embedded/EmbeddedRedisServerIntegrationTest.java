package dev.retrysafe.gateway.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/** The zero-setup Redis also works on a machine without redis-server on the PATH. */
class EmbeddedRedisServerIntegrationTest {

    @Test
    void theBundledBinaryStartsAnswersAndStops() {
        Path directory = Path.of("target/embedded-redis-bundled");
        EmbeddedRedisServer server = new EmbeddedRedisServer(0, directory, EmbeddedRedisServer.bundled(directory));
        LettuceConnectionFactory connections =
                new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", server.port()));
        try {
            connections.afterPropertiesSet();
            connections.start();
            org.springframework.data.redis.connection.ReactiveRedisConnection connection = connections.getReactiveConnection();
            assertThat(connection.ping().block()).isEqualTo("PONG");
        } finally {
            connections.destroy();
            server.stop();
        }
        assertThat(server.isRunning()).isFalse();
        assertThat(directory).isDirectoryContaining(p -> p.getFileName().toString().startsWith("redis-server"));
    }
}
