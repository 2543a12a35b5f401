package dev.retrysafe.gateway;

/**
 * Reactor Netty 1.3.6 and 1.3.7 (the server's HTTP/1.1 engine here) can stop reading a keep-alive connection for
 * good. A request that arrives before the previous request's operations have terminated (the client had its whole
 * answer and sent the next request at once) is queued with its last content; when the queue drains with no request
 * left in it, nothing asks the connection to read again, and no idle timeout is armed either. The client's next
 * request then waits forever, on a gateway that answers every other connection (Reactor Netty issue #4361, fixed
 * after 1.3.7). It happens when the server is slow between writing an answer and ending its exchange: right after
 * start, on a busy node. With {@code reactor.netty.http.server.lastFlushWhenNoRead} the previous operations end
 * before the next request is read, so it is served at once instead of queued.
 * <p>
 * Drop this once the Reactor Netty that Spring Boot brings has the fix. A value given on the command line wins.
 */
final class KeepAliveReadStall {
    static final String PROPERTY = "reactor.netty.http.server.lastFlushWhenNoRead";

    private KeepAliveReadStall() {
    }

    /** Before anything starts a server: Reactor Netty reads the property once, when its first connection comes. */
    static void avoid() {
        if (System.getProperty(PROPERTY) == null) {
            System.setProperty(PROPERTY, "true");
        }
    }
}
