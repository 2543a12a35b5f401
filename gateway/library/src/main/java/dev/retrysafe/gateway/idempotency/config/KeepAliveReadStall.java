package dev.retrysafe.gateway.idempotency.config;

import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;

/**
 * Reactor Netty 1.3.6 and 1.3.7 (the server's HTTP/1.1 engine with Spring Boot 4.0.7) can stop reading a keep-alive
 * connection for good. A request that arrives before the previous request's operations have terminated (the client
 * had its whole answer and sent the next request at once) is queued with its last content; when the queue drains
 * with no request left in it, nothing asks the connection to read again, and no idle timeout is armed either. The
 * client's next request then waits forever, on a gateway that answers every other connection (Reactor Netty issue
 * #4361, fixed after 1.3.7). It happens when the server is slow between writing an answer and ending its exchange:
 * right after start, on a busy node. With {@code reactor.netty.http.server.lastFlushWhenNoRead} the previous
 * operations end before the next request is read, so it is served at once instead of queued.
 * <p>
 * Every application with the library gets it (registered in {@code META-INF/spring.factories}), not only our
 * server. It is a JVM system property that Reactor Netty reads once, when its HTTP server classes are first used
 * (the first connection), so it is set while the environment is prepared, before any bean exists. The application's
 * own value wins: a {@code -D} system property, or the same key in its configuration (an environment variable,
 * {@code application.yml}, a command-line argument), which is copied to the system property; {@code false} turns it
 * off. Drop this class once the Reactor Netty that Spring Boot brings has the fix.
 */
public final class KeepAliveReadStall implements EnvironmentPostProcessor, Ordered {
    static final String PROPERTY = "reactor.netty.http.server.lastFlushWhenNoRead";

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        if (System.getProperty(PROPERTY) == null) {
            System.setProperty(PROPERTY, environment.getProperty(PROPERTY, "true"));
        }
    }

    /** After the config data post-processor, so that the application's own files are read. */
    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE;
    }
}
