package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.support.TcpHop;
import java.io.IOException;
import java.time.Duration;

/**
 * A TCP hop between replicas and their master that can be frozen: bytes from the master are then held back
 * instead of delivered, as on a congested or partitioned network. It makes "acknowledged by the master, not yet on
 * any replica" a state a test can hold, instead of a race it hopes to win. Replicas' acknowledgements still flow to
 * the master, so the link stays up.
 */
public final class FreezableLink implements AutoCloseable {
    private static final Duration FOREVER = Duration.ofNanos(Long.MAX_VALUE);
    private final TcpHop hop;

    public FreezableLink(int targetPort) throws IOException {
        hop = new TcpHop(targetPort, () -> (bytes, length) -> { });
    }

    public int port() {
        return hop.port();
    }

    /** From now on nothing more reaches the replicas; bytes already read from the master are held too. */
    public void freeze() {
        hop.holdFromTarget(FOREVER);
    }

    /** Cuts every connection; what was held back is dropped. */
    @Override
    public void close() {
        hop.close();
    }
}
