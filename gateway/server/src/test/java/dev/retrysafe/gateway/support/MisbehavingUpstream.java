package dev.retrysafe.gateway.support;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An HTTP upstream on a real socket that misbehaves on purpose, by path:
 * {@code /never...} reads the request and never answers; {@code /close-before...} reads it and hangs up;
 * {@code /mid-body...} sends headers announcing 1000 bytes, 100 of them, then hangs up.
 */
public final class MisbehavingUpstream implements AutoCloseable {
    private final ServerSocket server;
    private final Map<String, AtomicInteger> requests = new ConcurrentHashMap<>();
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    public MisbehavingUpstream() throws IOException {
        server = new ServerSocket(0);
        acceptor = new Thread(this::acceptLoop, "misbehaving-upstream");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public int port() {
        return server.getLocalPort();
    }

    public int requestsTo(String path) {
        AtomicInteger count = requests.get(path);
        return count == null ? 0 : count.get();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket socket = server.accept();
                open.add(socket);
                Thread handler = new Thread(() -> handle(socket), "misbehaving-upstream-conn");
                handler.setDaemon(true);
                handler.start();
            } catch (IOException closed) {
                return;
            }
        }
    }

    private void handle(Socket socket) {
        try {
            String path = readRequest(socket.getInputStream());
            requests.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
            OutputStream out = socket.getOutputStream();
            if (path.startsWith("/mid-body")) {
                out.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n"
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(new byte[100]);
                out.flush();
                socket.close();
            } else if (path.startsWith("/close-before")) {
                socket.close();
            }
            // "/never": keep the socket open and silent until the test ends.
        } catch (IOException e) {
            // the gateway hung up: nothing to do
        }
    }

    /** Reads the request head and its Content-Length body; returns the path. */
    private static String readRequest(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed");
            }
            head.write(b);
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        String lower = text.toLowerCase();
        int at = lower.indexOf("content-length:");
        if (at >= 0) {
            int length = Integer.parseInt(lower.substring(at + 15, lower.indexOf("\r\n", at)).trim());
            in.readNBytes(length);
        }
        String requestLine = text.substring(0, text.indexOf("\r\n"));
        return requestLine.split(" ")[1];
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket socket : open) {
            socket.close();
        }
    }
}
