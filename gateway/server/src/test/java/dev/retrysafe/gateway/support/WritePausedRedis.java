package dev.retrysafe.gateway.support;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

/**
 * A connection of its own to the test Redis that holds every client's writes ({@code CLIENT PAUSE ... WRITE}: scripts
 * wait too) while reads go on, so a test can see what the gateway does while a store write has been sent but not
 * yet run. Reads made here are not queued behind the gateway's held commands, as they would be on its connection.
 */
public final class WritePausedRedis implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    public WritePausedRedis(int port, Duration pause) throws IOException {
        socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(10_000);
        in = new BufferedInputStream(socket.getInputStream());
        out = socket.getOutputStream();
        command("CLIENT", "PAUSE", Long.toString(pause.toMillis()), "WRITE");
    }

    /** Waits until some client's script is held by the pause: a store write was sent and has not run. */
    public void awaitHeldScript(Duration deadline) throws IOException, InterruptedException {
        long end = System.nanoTime() + deadline.toNanos();
        while (Arrays.stream(command("CLIENT", "LIST").split("\n"))
                .noneMatch(client -> client.contains(" flags=b ") && client.contains(" cmd=eval"))) {
            if (System.nanoTime() > end) {
                throw new AssertionError("no script was held by the pause within " + deadline + ":\n"
                        + command("CLIENT", "LIST"));
            }
            Thread.sleep(5); // poll interval, not a synchronisation: the condition is checked again
        }
    }

    public String hget(String key, String field) throws IOException {
        return command("HGET", key, field);
    }

    /** Lets the held writes run; closing again does nothing. */
    @Override
    public void close() throws IOException {
        if (socket.isClosed()) {
            return;
        }
        try {
            command("CLIENT", "UNPAUSE");
        } finally {
            socket.close();
        }
    }

    /** One command in RESP; the reply as text, null for a nil bulk string. */
    private String command(String... args) throws IOException {
        ByteArrayOutputStream request = new ByteArrayOutputStream();
        request.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
        for (String arg : args) {
            byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
            request.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            request.writeBytes(bytes);
            request.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
        }
        out.write(request.toByteArray());
        out.flush();
        String line = line();
        return switch (line.charAt(0)) {
            case '+', ':' -> line.substring(1);
            case '$' -> bulk(Integer.parseInt(line.substring(1)));
            default -> throw new IOException("Redis answered " + line);
        };
    }

    private String bulk(int length) throws IOException {
        if (length < 0) {
            return null;
        }
        String text = new String(in.readNBytes(length), StandardCharsets.UTF_8);
        line();
        return text;
    }

    private String line() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b = in.read(); b != '\n'; b = in.read()) {
            if (b < 0) {
                throw new IOException("Redis closed the connection");
            }
            if (b != '\r') {
                line.write(b);
            }
        }
        return line.toString(StandardCharsets.UTF_8);
    }
}
