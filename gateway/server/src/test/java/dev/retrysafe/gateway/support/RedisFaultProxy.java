package dev.retrysafe.gateway.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy on a free loopback port between the gateway and its Redis that misbehaves on command, for a given
 * time, as networks and Redis servers do on a bad day:
 * <ul>
 * <li>{@link #delayReplies}: every reply Redis sends in the window reaches the client {@code delay} late, in order;
 * <li>{@link #stall}: nothing moves either way, connections stay open; what was sent waits and then flows;
 * <li>{@link #resetAll}: every connection is cut, with a reset (RST) or a plain close (FIN);
 * <li>{@link #halfOpen}: commands still reach Redis and run, their replies vanish, nothing is closed; when the
 * window ends, the connections that lost replies are reset, as a kernel's retransmission timeout would.
 * </ul>
 * Each connection is two directions, each a reader feeding a queue and a writer that delivers when the faults allow:
 * a held direction never stops the proxy from reading, so a delay is the same for every byte in its window. Redis
 * stopped (see {@link RestartableRedis}) means new connections are closed at once, as a refused connect would be.
 */
public final class RedisFaultProxy implements AutoCloseable {
    private final ServerSocket server;
    private final int targetPort;
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread thread = new Thread(r, "redis-fault-proxy-timer");
        thread.setDaemon(true);
        return thread;
    });
    private final Object faults = new Object();
    private long delayNanos;
    private long delayUntilNanos;
    private long stallUntilNanos;
    private long halfOpenUntilNanos;
    private final AtomicLong accepted = new AtomicLong();
    private volatile boolean closed;

    public RedisFaultProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        server = new ServerSocket(0, 100, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "redis-fault-proxy-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public int port() {
        return server.getLocalPort();
    }

    /** Connections accepted so far: a client that reconnected after a reset shows up here. */
    public long accepted() {
        return accepted.get();
    }

    /** For {@code window}, every reply read from Redis is delivered {@code delay} after it was read, in order. */
    public void delayReplies(Duration delay, Duration window) {
        synchronized (faults) {
            delayNanos = delay.toNanos();
            delayUntilNanos = System.nanoTime() + window.toNanos();
        }
    }

    /** For {@code window}, no byte moves in either direction; connections stay open. */
    public void stall(Duration window) {
        synchronized (faults) {
            stallUntilNanos = System.nanoTime() + window.toNanos();
            faults.notifyAll();
        }
    }

    /** For {@code window}, replies vanish (commands still run in Redis); then the connections that lost some reset. */
    public void halfOpen(Duration window) {
        synchronized (faults) {
            halfOpenUntilNanos = System.nanoTime() + window.toNanos();
        }
        links.forEach(link -> link.repliesLost = true);
        timer.schedule(this::endHalfOpen, window.toNanos(), TimeUnit.NANOSECONDS);
    }

    private void endHalfOpen() {
        synchronized (faults) {
            if (System.nanoTime() < halfOpenUntilNanos) {
                return; // extended by a later call: its own timer ends it
            }
        }
        links.stream().filter(link -> link.repliesLost).forEach(link -> link.cut(true));
    }

    /** Cuts every open connection: with a reset (RST) when {@code reset}, else with a plain close (FIN). */
    public void resetAll(boolean reset) {
        links.forEach(link -> link.cut(reset));
    }

    /** Ends every fault now; what was held flows, in order. */
    public void heal() {
        synchronized (faults) {
            delayUntilNanos = 0;
            stallUntilNanos = 0;
            halfOpenUntilNanos = 0;
            faults.notifyAll();
        }
        endHalfOpen();
        links.forEach(Link::wake);
    }

    private boolean halfOpenNow() {
        synchronized (faults) {
            return System.nanoTime() < halfOpenUntilNanos;
        }
    }

    /**
     * Waits while the proxy is stalled and, for a reply read in a delay window, until the delay has passed (asked
     * again on each wake-up, so that {@link #heal} lets it go at once); false when the link was cut meanwhile.
     */
    private boolean awaitDelivery(Chunk chunk, boolean reply, Link link) throws InterruptedException {
        synchronized (faults) {
            while (!closed && !link.cut) {
                long now = System.nanoTime();
                long dueAt = reply && chunk.readAt < delayUntilNanos ? chunk.readAt + delayNanos : chunk.readAt;
                long until = Math.max(dueAt, stallUntilNanos);
                if (now >= until) {
                    return true;
                }
                faults.wait(Math.max(1, (until - now) / 1_000_000));
            }
            return false;
        }
    }

    private void accept() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return;
            }
            accepted.incrementAndGet();
            try {
                Socket redis = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                Link link = new Link(client, redis);
                link.repliesLost = halfOpenNow();
                links.add(link);
                link.start();
            } catch (IOException redisDown) {
                closeQuietly(client);
            }
        }
    }

    private record Chunk(byte[] bytes, long readAt) {
    }

    /** One client connection and its connection to Redis. */
    private final class Link {
        final Socket client;
        final Socket redis;
        volatile boolean repliesLost;
        volatile boolean cut;
        private final BlockingQueue<Chunk> commands = new LinkedBlockingQueue<>();
        private final BlockingQueue<Chunk> replies = new LinkedBlockingQueue<>();

        Link(Socket client, Socket redis) throws IOException {
            this.client = client;
            this.redis = redis;
            client.setTcpNoDelay(true);
            redis.setTcpNoDelay(true);
        }

        void start() {
            thread("commands-in", () -> read(client, commands));
            thread("commands-out", () -> write(commands, redis, false));
            thread("replies-in", () -> read(redis, replies));
            thread("replies-out", () -> write(replies, client, true));
        }

        private void read(Socket from, BlockingQueue<Chunk> queue) {
            byte[] buffer = new byte[16 * 1024];
            try {
                InputStream in = from.getInputStream();
                int read;
                while ((read = in.read(buffer)) >= 0) {
                    queue.add(new Chunk(Arrays.copyOf(buffer, read), System.nanoTime()));
                }
            } catch (IOException e) {
                // this side hung up, or the link was cut
            }
            // End of stream: the writer passes it on once everything read before it was delivered.
            queue.add(new Chunk(null, System.nanoTime()));
        }

        private void write(BlockingQueue<Chunk> queue, Socket to, boolean reply) {
            try {
                OutputStream out = to.getOutputStream();
                while (true) {
                    Chunk chunk = queue.take();
                    if (!awaitDelivery(chunk, reply, this)) {
                        return;
                    }
                    if (chunk.bytes == null) {
                        break;
                    }
                    if (reply && repliesLost) {
                        continue; // half-open: the reply vanishes on the way
                    }
                    out.write(chunk.bytes);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // the other side hung up, or the link was cut
            }
            cut(false);
        }

        void wake() {
            synchronized (faults) {
                faults.notifyAll();
            }
        }

        void cut(boolean reset) {
            if (cut) {
                return;
            }
            cut = true;
            links.remove(this);
            if (reset) {
                try {
                    client.setSoLinger(true, 0); // close() now sends RST
                    redis.setSoLinger(true, 0);
                } catch (IOException alreadyClosed) {
                    // closed by the other direction meanwhile
                }
            }
            closeQuietly(client);
            closeQuietly(redis);
            commands.add(new Chunk(null, 0));
            replies.add(new Chunk(null, 0));
            wake();
        }

        private void thread(String name, Runnable body) {
            Thread thread = new Thread(body, "redis-fault-proxy-" + name);
            thread.setDaemon(true);
            thread.start();
        }
    }

    @Override
    public void close() {
        closed = true;
        heal();
        closeQuietly(server);
        links.forEach(link -> link.cut(false));
        timer.shutdownNow();
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            // already closed
        }
    }
}
