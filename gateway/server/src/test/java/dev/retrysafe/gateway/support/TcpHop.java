package dev.retrysafe.gateway.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/**
 * A TCP hop on a free loopback port to a target port that can hold back what the target sends, as a congested or
 * partitioned network would, and lets its test watch what clients send. The base of the network faults the tests
 * hold on purpose (a frozen replication link, a Redis answer made late) instead of racing for them.
 */
public final class TcpHop implements AutoCloseable {
    /** Sees bytes read from one side before they are passed on; blocking here holds them back. */
    public interface Tap {
        void passing(byte[] bytes, int length) throws IOException, InterruptedException;
    }

    private final ServerSocket server;
    private final int targetPort;
    private final Supplier<Tap> fromClient;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object lock = new Object();
    private long heldUntilNanos;
    private boolean held;
    private volatile boolean closed;

    /** @param fromClient makes a tap for each connection (so that it may keep what it saw on its own one) */
    public TcpHop(int targetPort, Supplier<Tap> fromClient) throws IOException {
        this.targetPort = targetPort;
        this.fromClient = fromClient;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "tcp-hop-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public int port() {
        return server.getLocalPort();
    }

    /** From now on, for at most {@code max}, nothing more from the target is delivered; bytes already read wait too. */
    public void holdFromTarget(Duration max) {
        synchronized (lock) {
            held = true;
            heldUntilNanos = System.nanoTime() + Math.min(max.toNanos(), Long.MAX_VALUE / 2);
        }
    }

    /** What the target sent flows again, in order. */
    public void releaseFromTarget() {
        synchronized (lock) {
            held = false;
            lock.notifyAll();
        }
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = server.accept();
                Socket target = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                sockets.add(client);
                sockets.add(target);
                pump(client, target, fromClient.get());
                // Checked after the read: a chunk that arrives while held is held, never forwarded early.
                pump(target, client, (bytes, length) -> awaitRelease());
            } catch (IOException e) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to, Tap tap) {
        Thread thread = new Thread(() -> {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int read;
                while ((read = in.read(buffer)) >= 0) {
                    tap.passing(buffer, read);
                    out.write(buffer, 0, read);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // one side hung up, or the hop was closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "tcp-hop-pump");
        thread.setDaemon(true);
        thread.start();
    }

    private void awaitRelease() throws InterruptedException, IOException {
        synchronized (lock) {
            long left;
            while (!closed && held && (left = heldUntilNanos - System.nanoTime()) > 0) {
                lock.wait(Math.max(1, left / 1_000_000));
            }
        }
        if (closed) {
            throw new IOException("hop closed");
        }
    }

    /** Cuts every connection; what was held back is dropped. */
    @Override
    public void close() {
        closed = true;
        synchronized (lock) {
            lock.notifyAll();
        }
        closeQuietly(server);
        sockets.forEach(TcpHop::closeQuietly);
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            // already closed
        }
    }
}
