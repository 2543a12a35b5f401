package dev.retrysafe.gateway.support;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * HTTP/1.1 over a plain socket, for requests no well-behaved client would send: control characters in headers,
 * thousands of duplicate headers, bodies that lie about their length. The request is written on its own thread so
 * that a server answering before it has read everything (413) is still heard; every read has a deadline, so a
 * server that hangs fails the test instead of blocking it.
 */
public final class RawHttpClient {
    private static final int MAX_RESPONSE_BYTES = 1024 * 1024;

    private final int port;

    public RawHttpClient(int port) {
        this.port = port;
    }

    /** A response, or {@link #closedWithoutAnswer()} when the server closed the connection without one. */
    public record Response(int status, Map<String, List<String>> headers, byte[] body, long requestBytesWritten) {
        public static Response closedWithoutAnswer(long written) {
            return new Response(-1, Map.of(), new byte[0], written);
        }

        public boolean closedWithoutAnswer() {
            return status < 0;
        }

        public String header(String name) {
            List<String> values = headers.get(name.toLowerCase(Locale.ROOT));
            return values == null || values.isEmpty() ? null : values.get(0);
        }

        public String bodyText() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /**
     * Writes the body, possibly in pieces; {@code answered} opens once the response's head has arrived, so a writer
     * can hold back the rest of a body until the server has answered without it.
     */
    public interface BodyWriter {
        void writeTo(OutputStream out, CountDownLatch answered) throws IOException, InterruptedException;
    }

    public Response send(String head, byte[] body, Duration deadline) {
        return send(head.getBytes(StandardCharsets.ISO_8859_1), (out, answered) -> out.write(body), deadline);
    }

    /**
     * @param head     request line and headers, each ending in CRLF, plus the empty line
     * @param body     written after the head, on a separate thread
     * @param deadline for the whole exchange
     */
    public Response send(byte[] head, BodyWriter body, Duration deadline) {
        long end = System.nanoTime() + deadline.toNanos();
        AtomicLong written = new AtomicLong();
        CountDownLatch answered = new CountDownLatch(1);
        try (Socket socket = new Socket("127.0.0.1", port)) {
            Thread writer = new Thread(() -> {
                try {
                    OutputStream out = new CountingOutputStream(socket.getOutputStream(), written);
                    out.write(head);
                    body.writeTo(out, answered);
                    out.flush();
                } catch (IOException serverStoppedReading) {
                    // Expected when the server answers early and closes: the response is read all the same.
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "raw-http-writer");
            writer.setDaemon(true);
            writer.start();
            return read(socket, end, written, answered);
        } catch (SocketTimeoutException e) {
            throw new AssertionError("No complete answer within " + deadline + " (the server hangs)", e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            answered.countDown(); // a writer still holding back its body stops
        }
    }

    private static Response read(Socket socket, long end, AtomicLong written, CountDownLatch answered)
            throws IOException {
        InputStream in = socket.getInputStream();
        ByteArrayOutputStream received = new ByteArrayOutputStream();
        byte[] buffer = new byte[16 * 1024];
        int headEnd;
        while ((headEnd = indexOf(received.toByteArray(), "\r\n\r\n")) < 0) {
            int n = readBefore(socket, in, buffer, end);
            if (n < 0) {
                return Response.closedWithoutAnswer(written.get());
            }
            received.write(buffer, 0, n);
        }
        answered.countDown();
        byte[] all = received.toByteArray();
        String[] lines = new String(all, 0, headEnd, StandardCharsets.ISO_8859_1).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.computeIfAbsent(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), k -> new ArrayList<>())
                    .add(lines[i].substring(colon + 1).trim());
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.write(all, headEnd + 4, all.length - headEnd - 4);
        List<String> length = headers.get("content-length");
        boolean chunked = headers.getOrDefault("transfer-encoding", List.of()).contains("chunked");
        while (!(length != null ? body.size() >= Integer.parseInt(length.get(0))
                : chunked ? endsWith(body.toByteArray(), "0\r\n\r\n") : false)) {
            int n = readBefore(socket, in, buffer, end);
            if (n < 0) {
                break; // neither length nor chunked: the body ends with the connection
            }
            body.write(buffer, 0, n);
            if (body.size() > MAX_RESPONSE_BYTES) {
                throw new AssertionError("Response body larger than " + MAX_RESPONSE_BYTES + " bytes");
            }
        }
        return new Response(status, headers, chunked ? dechunk(body.toByteArray()) : body.toByteArray(),
                written.get());
    }

    private static int readBefore(Socket socket, InputStream in, byte[] buffer, long end) throws IOException {
        long leftMillis = (end - System.nanoTime()) / 1_000_000;
        if (leftMillis <= 0) {
            throw new SocketTimeoutException("deadline passed");
        }
        socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, leftMillis));
        try {
            return in.read(buffer);
        } catch (java.net.SocketException reset) {
            return -1; // connection reset by the server: no (more) answer
        }
    }

    private static byte[] dechunk(byte[] chunked) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int at = 0;
        while (at < chunked.length) {
            int lineEnd = indexOf(chunked, "\r\n", at);
            int size = Integer.parseInt(new String(chunked, at, lineEnd - at, StandardCharsets.US_ASCII).trim(), 16);
            if (size == 0) {
                break;
            }
            out.write(chunked, lineEnd + 2, size);
            at = lineEnd + 2 + size + 2;
        }
        return out.toByteArray();
    }

    private static int indexOf(byte[] haystack, String needle) {
        return indexOf(haystack, needle, 0);
    }

    private static int indexOf(byte[] haystack, String needle, int from) {
        byte[] n = needle.getBytes(StandardCharsets.US_ASCII);
        outer:
        for (int i = from; i <= haystack.length - n.length; i++) {
            for (int j = 0; j < n.length; j++) {
                if (haystack[i + j] != n[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private static boolean endsWith(byte[] bytes, String suffix) {
        return bytes.length >= suffix.length() && indexOf(bytes, suffix, bytes.length - suffix.length()) >= 0;
    }

    private static final class CountingOutputStream extends OutputStream {
        private final OutputStream delegate;
        private final AtomicLong count;

        CountingOutputStream(OutputStream delegate, AtomicLong count) {
            this.delegate = delegate;
            this.count = count;
        }

        @Override
        public void write(int b) throws IOException {
            delegate.write(b);
            count.incrementAndGet();
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            delegate.write(b, off, len);
            count.addAndGet(len);
        }

        @Override
        public void flush() throws IOException {
            delegate.flush();
        }
    }
}
