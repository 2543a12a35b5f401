package dev.retrysafe.gateway.idempotency.support;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.serializer.RedisSerializationContext;
import org.springframework.data.redis.serializer.RedisSerializer;
import redis.embedded.RedisServer;
import redis.embedded.core.ExecutableProvider;

/**
 * A real redis-server for the library's tests, as the runnable server's EmbeddedRedisServer starts one (that class
 * is not on the library's classpath): the {@code redis-server} on the PATH when there is one, else the binary
 * bundled with embedded-redis, extracted into {@code target/embedded-redis}. On a free port, bound to 127.0.0.1,
 * without persistence. Close it when done.
 */
public final class RedisProcess implements AutoCloseable {
    private static final Path DIRECTORY = Path.of("target/embedded-redis");
    /** Another process may take the free port before redis-server binds it: try a few. */
    private static final int ATTEMPTS = 3;

    private final RedisServer server;
    private final int port;

    private RedisProcess(RedisServer server, int port) {
        this.server = server;
        this.port = port;
    }

    public static RedisProcess start() {
        return start(executable());
    }

    /** Redis 6.2, the binary bundled with embedded-redis whatever the PATH holds: for the paths older servers take. */
    public static RedisProcess startRedis6() {
        return start(ExecutableProvider.newJarResourceProvider(DIRECTORY.toFile()));
    }

    private static RedisProcess start(ExecutableProvider executable) {
        IOException last = null;
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            int port = freePort();
            try {
                Files.createDirectories(DIRECTORY);
                RedisServer server = RedisServer.newRedisServer()
                        .executableProvider(executable)
                        .bind("127.0.0.1")
                        .port(port)
                        .setting("save \"\"")
                        .setting("appendonly no")
                        .setting("dir " + DIRECTORY.toAbsolutePath())
                        .build();
                server.start();
                return new RedisProcess(server, port);
            } catch (IOException e) {
                last = e;
            }
        }
        throw new UncheckedIOException("Could not start redis-server", last);
    }

    public int port() {
        return port;
    }

    /** A started Lettuce connection factory on this server, with Spring's default client settings. */
    public LettuceConnectionFactory connect() {
        return connect(LettuceClientConfiguration.defaultConfiguration());
    }

    /** A started Lettuce connection factory on this server; destroy it when done. */
    public LettuceConnectionFactory connect(LettuceClientConfiguration client) {
        LettuceConnectionFactory connections = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration("127.0.0.1", port), client);
        connections.afterPropertiesSet();
        connections.start();
        return connections;
    }

    /** String keys and byte values, as the auto-configuration's template for the store. */
    public static ReactiveRedisTemplate<String, byte[]> bytesTemplate(ReactiveRedisConnectionFactory connections) {
        return new ReactiveRedisTemplate<>(connections, RedisSerializationContext
                .<String, byte[]>newSerializationContext(RedisSerializer.byteArray())
                .key(RedisSerializer.string()).hashKey(RedisSerializer.string()).build());
    }

    @Override
    public void close() {
        try {
            server.stop();
        } catch (IOException e) {
            throw new UncheckedIOException("redis-server on port " + port + " did not stop cleanly", e);
        }
    }

    private static ExecutableProvider executable() {
        try {
            return ExecutableProvider.newExecutableInPath("redis-server");
        } catch (FileNotFoundException notOnPath) {
            return ExecutableProvider.newJarResourceProvider(DIRECTORY.toFile());
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
