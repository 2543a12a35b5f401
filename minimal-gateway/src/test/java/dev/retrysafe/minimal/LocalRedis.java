package dev.retrysafe.minimal;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import redis.embedded.RedisServer;
import redis.embedded.core.ExecutableProvider;

/** The application's own Redis, as a platform team runs one (the library starts none): redis-server from the PATH, else embedded-redis's. */
final class LocalRedis {
    private LocalRedis() {
    }

    static RedisServer start() {
        try (ServerSocket socket = new ServerSocket(0)) {
            int port = socket.getLocalPort();
            socket.close();
            ExecutableProvider executable;
            try {
                executable = ExecutableProvider.newExecutableInPath("redis-server");
            } catch (FileNotFoundException notOnPath) {
                executable = ExecutableProvider.newJarResourceProvider(new File("target/embedded-redis"));
            }
            RedisServer server = RedisServer.newRedisServer().executableProvider(executable).bind("127.0.0.1")
                    .port(port).setting("save \"\"").setting("appendonly no").build();
            server.start();
            return server;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
