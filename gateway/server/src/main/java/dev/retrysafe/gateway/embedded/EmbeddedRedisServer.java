package dev.retrysafe.gateway.embedded;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import redis.embedded.RedisServer;
import redis.embedded.core.ExecutableProvider;

/**
 * A Redis server owned by the application context: started when the bean is created (before any connection is
 * made), stopped last on shutdown. Uses the {@code redis-server} on the PATH when there is one, else the binary
 * bundled with embedded-redis, extracted into {@code directory} (never a fresh temp folder per run).
 */
public final class EmbeddedRedisServer implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(EmbeddedRedisServer.class);

    private final RedisServer server;
    private final int port;
    private volatile boolean running;

    public EmbeddedRedisServer(int requestedPort, Path directory) {
        this(requestedPort, directory, executable(directory));
    }

    EmbeddedRedisServer(int requestedPort, Path directory, ExecutableProvider executable) {
        this.port = requestedPort > 0 ? requestedPort : freePort();
        try {
            Files.createDirectories(directory);
            this.server = RedisServer.newRedisServer()
                    .executableProvider(executable)
                    .bind("127.0.0.1")
                    .port(port)
                    .setting("save \"\"")
                    .setting("appendonly no")
                    .setting("dir " + directory.toAbsolutePath())
                    .build();
            server.start();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start the embedded Redis on port " + port, e);
        }
        running = true;
        log.info("Embedded Redis listening on 127.0.0.1:{}", port);
    }

    public int port() {
        return port;
    }

    /** Started in the constructor (the connection details need the port first); starts again after a stop. */
    @Override
    public synchronized void start() {
        if (!running) {
            try {
                server.start();
            } catch (IOException e) {
                throw new UncheckedIOException("Could not restart the embedded Redis on port " + port, e);
            }
            running = true;
        }
    }

    @Override
    public synchronized void stop() {
        if (running) {
            running = false;
            try {
                server.stop();
            } catch (IOException e) {
                log.warn("Embedded Redis did not stop cleanly: {}", e.toString());
            }
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Lowest phase: started first, stopped after every Redis client. */
    @Override
    public int getPhase() {
        return Integer.MIN_VALUE;
    }

    static ExecutableProvider bundled(Path directory) {
        return ExecutableProvider.newJarResourceProvider(directory.toFile());
    }

    private static ExecutableProvider executable(Path directory) {
        try {
            return ExecutableProvider.newExecutableInPath("redis-server");
        } catch (FileNotFoundException notOnPath) {
            return bundled(directory);
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
