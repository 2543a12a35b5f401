package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.support.SocketUpstream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An upstream on a real socket that answers every request 202 without looking at its headers or body. WireMock
 * parses what it receives (a malformed charset makes it answer 500 itself), which would hide whether a 5xx came
 * from the gateway; this one only frames requests (Content-Length or chunked) and counts them. A test may
 * {@link #holdAnswers() hold} its answers: requests are counted on arrival, answered once the test lets go.
 */
public final class AcceptingUpstream extends SocketUpstream {
    private final AtomicInteger requests = new AtomicInteger();
    private final Map<String, Integer> receivedKeys = new ConcurrentHashMap<>();
    private volatile CountDownLatch answers = new CountDownLatch(0);

    public AcceptingUpstream() {
        super("accepting-upstream");
    }

    /**
     * From now on every request is received and counted but not answered until the returned action runs (it lets
     * every held request go at once, and later ones through).
     */
    public Runnable holdAnswers() {
        CountDownLatch held = new CountDownLatch(1);
        answers = held;
        return held::countDown;
    }

    public int requests() {
        return requests.get();
    }

    /** How many whole requests arrived with this Idempotency-Key. */
    public int received(String key) {
        return receivedKeys.getOrDefault(key, 0);
    }

    /** Serves requests on one kept-alive connection until the gateway closes it. */
    @Override
    public void serve(Socket socket) {
        try (socket) {
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            String head;
            while ((head = readHead(in)) != null) {
                String lower = head.toLowerCase(Locale.ROOT);
                int at = lower.indexOf("\r\ncontent-length:");
                if (at >= 0) {
                    in.readNBytes(Integer.parseInt(lower.substring(at + 17, lower.indexOf("\r\n", at + 2)).trim()));
                } else if (lower.contains("\r\ntransfer-encoding: chunked")) {
                    skipChunks(in);
                }
                int keyAt = lower.indexOf("\r\nidempotency-key:");
                if (keyAt >= 0) {
                    receivedKeys.merge(head.substring(keyAt + 18, head.indexOf("\r\n", keyAt + 2)).trim(), 1,
                            Integer::sum);
                }
                int request = requests.incrementAndGet();
                awaitAnswer();
                byte[] body = ("{\"processId\":\"p-" + request + "\"}").getBytes(StandardCharsets.US_ASCII);
                out.write(("HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: "
                        + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
            }
        } catch (IOException gone) {
            // the gateway closed the connection
        }
    }

    private void awaitAnswer() throws IOException {
        try {
            answers.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while holding the answer", e);
        }
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                return null;
            }
            head.write(b);
            matched = (b == '\r' && matched % 2 == 0) || (b == '\n' && matched % 2 == 1) ? matched + 1 : 0;
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    private static void skipChunks(InputStream in) throws IOException {
        while (true) {
            String sizeLine = readLine(in);
            int size = Integer.parseInt(sizeLine.split(";")[0].trim(), 16);
            if (size == 0) {
                while (!readLine(in).isEmpty()) {
                    // trailers
                }
                return;
            }
            in.readNBytes(size);
            readLine(in);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        for (int b = in.read(); b >= 0 && b != '\n'; b = in.read()) {
            if (b != '\r') {
                line.append((char) b);
            }
        }
        return line.toString();
    }
}
