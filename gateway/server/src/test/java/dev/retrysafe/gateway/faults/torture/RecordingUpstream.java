package dev.retrysafe.gateway.faults.torture;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The upstream on a raw socket, one thread per connection, keep-alive as the gateway's pool likes it. It logs every
 * request it received whole, with its Idempotency-Key and the exact body bytes, and answers each key as told:
 * normally, slowly, with a reset, never, with half a response, or with a 503 the gateway releases the key on. It also
 * answers the route's reconciliation lookups ({@value #LOOKUP_PATH}{key}) truthfully, as a backend that keeps its
 * writes would: 200 with the answer it gave (or began to give) for a key whose request it received and took, 404 for
 * a key it never received or answered 503 to. A request whose answer broke (reset, never answered, cut short) was
 * still received whole and taken: a backend has that write, so its lookup finds it, with the answer it produced.
 */
final class RecordingUpstream implements AutoCloseable {
    static final int RELEASED_STATUS = 503;
    static final String LOOKUP_PATH = "/torture-lookups/";
    static final int FOUND_STATUS = 200;
    static final int NOT_FOUND_STATUS = 404;

    /** One lookup of a key by the gateway's reconciler, when it arrived ({@code System.nanoTime}) and its answer. */
    record Lookup(String key, long atNanos, int status) {
    }

    /** One request the upstream received whole; {@code answeredStatus} is set once its answer was fully written. */
    static final class Receipt {
        final int id;
        final String key;
        final byte[] body;
        final UpstreamFault fault;
        final byte[] responseBody;
        final long receivedNanos = System.nanoTime();
        volatile int answeredStatus;

        Receipt(int id, String key, byte[] body, UpstreamFault fault) {
            this.id = id;
            this.key = key;
            this.body = body;
            this.fault = fault;
            this.responseBody = HttpMessage.ascii("{\"receipt\":" + id + ",\"key\":\"" + key + "\"}");
        }

        /** The upstream took the write: everything but its 503, which says it did not. */
        boolean taken() {
            return fault != UpstreamFault.UNAVAILABLE;
        }
    }

    private final ServerSocket server;
    private final Duration slowAnswer;
    private final Map<String, UpstreamFault> faults = new ConcurrentHashMap<>();
    private final Queue<Receipt> receipts = new ConcurrentLinkedQueue<>();
    private final Queue<Lookup> lookups = new ConcurrentLinkedQueue<>();
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private final AtomicInteger ids = new AtomicInteger();

    /** @param slowAnswer how long {@link UpstreamFault#SLOW} waits before answering (below the response timeout) */
    RecordingUpstream(Duration slowAnswer) throws IOException {
        this.slowAnswer = slowAnswer;
        server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::acceptLoop, "recording-upstream");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** Set before the key's first request is sent. Unknown keys are answered normally. */
    void answer(String key, UpstreamFault fault) {
        faults.put(key, fault);
    }

    List<Receipt> receipts() {
        return new ArrayList<>(receipts);
    }

    List<Lookup> lookups() {
        return new ArrayList<>(lookups);
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket socket = server.accept();
                open.add(socket);
                Thread handler = new Thread(() -> serve(socket), "recording-upstream-conn");
                handler.setDaemon(true);
                handler.start();
            } catch (IOException closed) {
                return;
            }
        }
    }

    private void serve(Socket socket) {
        try (socket) {
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            HttpMessage request;
            while ((request = HttpMessage.read(in, false)) != null) {
                String target = request.startLine().split(" ")[1];
                if (request.startLine().startsWith("GET ") && target.startsWith(LOOKUP_PATH)) {
                    lookUp(out, target.substring(LOOKUP_PATH.length()));
                    continue;
                }
                String key = request.header("Idempotency-Key");
                UpstreamFault fault = key == null ? UpstreamFault.NORMAL : faults.getOrDefault(key, UpstreamFault.NORMAL);
                Receipt receipt = new Receipt(ids.incrementAndGet(), key, request.body(), fault);
                receipts.add(receipt);
                if (!answer(socket, in, out, receipt)) {
                    return;
                }
            }
        } catch (IOException | InterruptedException gatewayHungUp) {
            // the gateway closed or reset its side: the receipts so far are logged
        } finally {
            open.remove(socket);
        }
    }

    /** The key's latest request the upstream took, by its receipt: a truthful answer, never faulted. */
    private void lookUp(OutputStream out, String key) throws IOException {
        long at = System.nanoTime();
        Receipt taken = null;
        for (Receipt receipt : receipts) {
            if (key.equals(receipt.key) && receipt.taken()) {
                taken = receipt;
            }
        }
        byte[] body = taken == null ? new byte[0] : taken.responseBody;
        int status = taken == null ? NOT_FOUND_STATUS : FOUND_STATUS;
        lookups.add(new Lookup(key, at, status));
        out.write(HttpMessage.ascii("HTTP/1.1 " + status + " Whatever\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length + "\r\n\r\n"));
        out.write(body);
        out.flush();
    }

    /** @return whether the connection stays usable for another request */
    private boolean answer(Socket socket, InputStream in, OutputStream out, Receipt receipt)
            throws IOException, InterruptedException {
        switch (receipt.fault) {
            case RESET -> {
                socket.setSoLinger(true, 0); // close() now sends RST
                return false;
            }
            case TIMEOUT -> {
                while (in.read() >= 0) {
                    // silent until the gateway gives up and closes
                }
                return false;
            }
            case PARTIAL -> {
                out.write(HttpMessage.ascii("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                        + "Content-Length: " + (receipt.responseBody.length + 100) + "\r\n\r\n"));
                out.write(receipt.responseBody);
                out.flush();
                return false;
            }
            case SLOW -> Thread.sleep(slowAnswer.toMillis()); // fault injection: an upstream that takes its time
            default -> {
            }
        }
        int status = receipt.fault == UpstreamFault.UNAVAILABLE ? RELEASED_STATUS : 201;
        out.write(HttpMessage.ascii("HTTP/1.1 " + status + " Whatever\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + receipt.responseBody.length + "\r\n\r\n"));
        out.write(receipt.responseBody);
        out.flush();
        receipt.answeredStatus = status;
        return true;
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket socket : open) {
            socket.close();
        }
    }
}
