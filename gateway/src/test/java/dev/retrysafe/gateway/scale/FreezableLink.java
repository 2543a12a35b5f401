package dev.retrysafe.gateway.scale;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP hop between replicas and their master that can be frozen: bytes from the master are then held back
 * instead of delivered, as on a congested or partitioned network. It makes "acknowledged by the master, not yet on
 * any replica" a state a test can hold, instead of a race it hopes to win. Replicas' acknowledgements still flow to
 * the master, so the link stays up.
 */
final class FreezableLink implements AutoCloseable {
    private final ServerSocket server;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object lock = new Object();
    private boolean frozen;
    private volatile boolean closed;

    FreezableLink(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "freezable-link-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** From now on nothing more reaches the replicas; bytes already read from the master are held too. */
    void freeze() {
        synchronized (lock) {
            frozen = true;
        }
    }

    private void accept() {
        while (!closed) {
            try {
                Socket replica = server.accept();
                Socket master = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                sockets.add(replica);
                sockets.add(master);
                pump(replica, master, false);
                pump(master, replica, true);
            } catch (IOException e) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to, boolean freezable) {
        Thread thread = new Thread(() -> {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int read;
                while ((read = in.read(buffer)) >= 0) {
                    if (freezable) {
                        // Checked after the read: a chunk that arrives while frozen is held, never forwarded.
                        awaitThaw();
                    }
                    out.write(buffer, 0, read);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // the other side hung up, or the link was closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "freezable-link-pump");
        thread.setDaemon(true);
        thread.start();
    }

    private void awaitThaw() throws InterruptedException, IOException {
        synchronized (lock) {
            while (frozen && !closed) {
                lock.wait();
            }
        }
        if (closed) {
            throw new IOException("link closed");
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
        sockets.forEach(FreezableLink::closeQuietly);
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            // already closed
        }
    }
}
