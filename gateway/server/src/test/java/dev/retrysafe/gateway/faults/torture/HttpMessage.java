package dev.retrysafe.gateway.faults.torture;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One HTTP/1.1 message read off a socket: the start line, headers (last value wins, names lower case) and the body
 * as framed by Content-Length or chunked encoding. The upstream reads requests with it and the client responses.
 */
record HttpMessage(String startLine, Map<String, String> headers, byte[] body) {

    String header(String name) {
        return headers.get(name.toLowerCase(Locale.ROOT));
    }

    /** The status of a response's start line. */
    int status() {
        return Integer.parseInt(startLine.split(" ")[1]);
    }

    /** Reads one message; {@code null} when the stream ends cleanly before its first byte. */
    static HttpMessage read(InputStream in, boolean bodyUntilClose) throws IOException {
        HttpMessage head = readHead(in);
        return head == null ? null : head.withBody(in, bodyUntilClose);
    }

    /** Reads the start line and the headers only, the body left unread; {@code null} as {@link #read}. */
    static HttpMessage readHead(InputStream in) throws IOException {
        String startLine = line(in, true);
        if (startLine == null) {
            return null;
        }
        Map<String, String> headers = new LinkedHashMap<>();
        for (String line = line(in, false); !line.isEmpty(); line = line(in, false)) {
            int colon = line.indexOf(':');
            headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
        }
        return new HttpMessage(startLine, headers, new byte[0]);
    }

    /** This head with its body, read as its headers frame it. */
    HttpMessage withBody(InputStream in, boolean bodyUntilClose) throws IOException {
        String length = headers.get("content-length");
        if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            return new HttpMessage(startLine, headers, dechunk(in));
        }
        if (length != null) {
            return new HttpMessage(startLine, headers, exactly(in, Integer.parseInt(length)));
        }
        return new HttpMessage(startLine, headers, bodyUntilClose ? in.readAllBytes() : new byte[0]);
    }

    private static byte[] dechunk(InputStream in) throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            String size = line(in, false);
            int semicolon = size.indexOf(';');
            int n = Integer.parseInt((semicolon < 0 ? size : size.substring(0, semicolon)).trim(), 16);
            if (n == 0) {
                while (!line(in, false).isEmpty()) {
                    // trailers: not kept
                }
                return body.toByteArray();
            }
            body.write(exactly(in, n));
            line(in, false);
        }
    }

    private static byte[] exactly(InputStream in, int n) throws IOException {
        byte[] bytes = in.readNBytes(n);
        if (bytes.length < n) {
            throw new EOFException("body ended after " + bytes.length + " of " + n + " bytes");
        }
        return bytes;
    }

    /** A CRLF-terminated line; at the start of a message, {@code null} for a stream that ends there. */
    private static String line(InputStream in, boolean mayEnd) throws IOException {
        StringBuilder line = new StringBuilder();
        while (true) {
            int b = in.read();
            if (b < 0) {
                if (mayEnd && line.length() == 0) {
                    return null;
                }
                throw new EOFException("stream ended inside a line: " + line);
            }
            if (b == '\n') {
                int end = line.length();
                return end > 0 && line.charAt(end - 1) == '\r' ? line.substring(0, end - 1) : line.toString();
            }
            line.append((char) b);
        }
    }

    static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }
}
