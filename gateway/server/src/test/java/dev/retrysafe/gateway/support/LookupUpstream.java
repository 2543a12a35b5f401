package dev.retrysafe.gateway.support;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * A backend with a lookup, on a real socket: each request is recorded as {@code METHOD raw-path-and-query} (exactly
 * as it came on the wire) and answered as {@link #answers} says, one request per connection. {@link Answer#NONE}
 * reads the request and never answers: the gateway's response timeout then makes its record UNCERTAIN.
 */
public final class LookupUpstream extends SocketUpstream implements AutoCloseable {
    private final List<String> received = new CopyOnWriteArrayList<>();
    /** Held so that a silent connection stays open: an unreachable socket is closed when it is collected. */
    private final List<Socket> silent = new CopyOnWriteArrayList<>();
    private volatile BiFunction<String, String, Answer> answers = (request, head) -> Answer.NONE;

    public LookupUpstream() {
        super("lookup-upstream");
    }

    /** How to answer a request, by its {@code METHOD raw-target}. */
    public record Answer(int status, String contentType, String body, Duration after) {
        public static final Answer NONE = new Answer(0, "", "", Duration.ZERO);

        public static Answer json(int status, String body) {
            return new Answer(status, "application/json", body, Duration.ZERO);
        }

        /** The same answer from a slow backend: it takes {@code time} to come. */
        public Answer after(Duration time) {
            return new Answer(status, contentType, body, time);
        }
    }

    public void answer(Function<String, Answer> answers) {
        answerByHead((request, head) -> answers.apply(request));
    }

    /** The same, also given the request's whole head (request line and headers, as sent): credentials, say. */
    public void answerByHead(BiFunction<String, String, Answer> answers) {
        this.answers = answers;
    }

    /** Every request received so far, oldest first. */
    public List<String> received() {
        return List.copyOf(received);
    }

    public long received(String prefix) {
        return received.stream().filter(request -> request.startsWith(prefix)).count();
    }

    @Override
    void serve(Socket socket) {
        try {
            String head = readHead(socket.getInputStream());
            String[] requestLine = head.substring(0, head.indexOf("\r\n")).split(" ");
            String request = requestLine[0] + " " + requestLine[1];
            received.add(request);
            Answer answer = answers.apply(request, head);
            if (answer.status() == 0) {
                silent.add(socket); // silent until the gateway hangs up
                return;
            }
            if (!answer.after().isZero()) {
                Thread.sleep(answer.after().toMillis()); // the backend's own slowness, on its connection's thread
            }
            byte[] body = answer.body().getBytes(StandardCharsets.UTF_8);
            OutputStream out = socket.getOutputStream();
            out.write(("HTTP/1.1 " + answer.status() + " X\r\nContent-Type: " + answer.contentType()
                    + "\r\nContent-Length: " + body.length + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            socket.close();
        } catch (IOException e) {
            // the gateway hung up
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Hangs up the silent connections. */
    @Override
    public void close() throws IOException {
        for (Socket socket : silent) {
            socket.close();
        }
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed");
            }
            head.write(b);
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        String lower = text.toLowerCase(Locale.ROOT);
        int at = lower.indexOf("content-length:");
        if (at >= 0) {
            in.readNBytes(Integer.parseInt(lower.substring(at + 15, lower.indexOf("\r\n", at)).trim()));
        }
        return text;
    }
}
