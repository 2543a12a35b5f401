package dev.retrysafe.gateway.support;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One command to a Redis or Sentinel node over a socket of its own, its RESP2 reply parsed: a poll that starts no
 * process. redis-cli in a tight loop was a process per poll, CPU that the nodes and the gateway of a loaded 2-core
 * machine need to answer each other within their timeouts.
 */
public final class RespProbe {
    /** An error reply ({@code -ERR ...}, {@code -INPROG ...}). */
    public record Error(String message) {
    }

    private RespProbe() {
    }

    /**
     * The reply: a String (simple or bulk), a Long, a List of replies, an {@link Error}, or null for a null reply and
     * for no reply at all (the node is down, or said nothing within 5 s).
     */
    public static Object call(int port, String... command) {
        StringBuilder request = new StringBuilder("*" + command.length + "\r\n");
        for (String part : command) {
            request.append('$').append(part.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(part)
                    .append("\r\n");
        }
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(5000);
            socket.getOutputStream().write(request.toString().getBytes(StandardCharsets.UTF_8));
            return reply(new DataInputStream(new BufferedInputStream(socket.getInputStream())));
        } catch (IOException | RuntimeException noAnswer) {
            return null;
        }
    }

    /** The reply as text (INFO, CLIENT LIST, CLUSTER INFO, a status), without carriage returns; empty if none. */
    public static String text(int port, String... command) {
        return call(port, command) instanceof String text ? text.replace("\r", "") : "";
    }

    /** Between two polls of a condition: a millisecond, so that a poll loop leaves the CPU to the nodes. */
    public static void pollAgain() throws InterruptedException {
        TimeUnit.MILLISECONDS.sleep(1);
    }

    static Object reply(DataInputStream in) throws IOException {
        String line = line(in);
        if (line.isEmpty()) {
            throw new IOException("An empty RESP line");
        }
        String rest = line.substring(1);
        return switch (line.charAt(0)) {
            case '+' -> rest;
            case '-' -> new Error(rest);
            case ':' -> Long.parseLong(rest);
            case '$' -> {
                int length = Integer.parseInt(rest);
                if (length < 0) {
                    yield null;
                }
                byte[] body = new byte[length + 2];
                in.readFully(body);
                yield new String(body, 0, length, StandardCharsets.UTF_8);
            }
            case '*' -> {
                int count = Integer.parseInt(rest);
                if (count < 0) {
                    yield null;
                }
                List<Object> items = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    items.add(reply(in));
                }
                yield items;
            }
            default -> throw new IOException("Not a RESP2 reply: " + line);
        };
    }

    private static String line(DataInputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        for (int b = in.read(); b != '\n'; b = in.read()) {
            if (b < 0) {
                throw new IOException("The node closed mid-reply");
            }
            if (b != '\r') {
                line.append((char) b);
            }
        }
        return line.toString();
    }
}
