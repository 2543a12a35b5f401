package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.support.SocketUpstream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/** An upstream on a real socket that answers every request with {@code size} bytes, counting what it wrote. */
public final class LargeBodyUpstream extends SocketUpstream {
    private final long size;
    private final AtomicLong written = new AtomicLong();

    public LargeBodyUpstream(long size) {
        super("large-body-upstream");
        this.size = size;
    }

    public long written() {
        return written.get();
    }

    @Override
    public void serve(Socket socket) {
        try (socket) {
            InputStream in = socket.getInputStream();
            StringBuilder head = new StringBuilder();
            while (!head.toString().endsWith("\r\n\r\n")) {
                int b = in.read();
                if (b < 0) {
                    return;
                }
                head.append((char) b);
            }
            String lower = head.toString().toLowerCase();
            int at = lower.indexOf("content-length:");
            if (at >= 0) {
                in.readNBytes(Integer.parseInt(lower.substring(at + 15, lower.indexOf("\r\n", at)).trim()));
            }
            OutputStream out = socket.getOutputStream();
            out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " + size
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            byte[] chunk = new byte[64 * 1024];
            for (long sent = 0; sent < size; sent += chunk.length) {
                out.write(chunk, 0, (int) Math.min(chunk.length, size - sent));
                written.addAndGet(Math.min(chunk.length, size - sent));
            }
            out.flush();
        } catch (IOException gone) {
            // the gateway hung up
        }
    }
}
