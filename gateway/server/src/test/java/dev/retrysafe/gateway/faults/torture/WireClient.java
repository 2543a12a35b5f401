package dev.retrysafe.gateway.faults.torture;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.function.IntSupplier;

/**
 * A client speaking raw HTTP/1.1 over one socket per request, able to do everything a well-behaved client never
 * does: hang up before, at or after its last byte or after the first byte of the answer, break the chunk framing,
 * send a Transfer-Encoding the server must refuse, stall in the middle of its body, leave its key out. Each request
 * goes to its route's path ({@link RouteKind#path}).
 */
final class WireClient {
    /** The client hung up on purpose before reading an answer. */
    static final int HUNG_UP = -2;
    /** The connection was closed (or reset) without a complete answer. */
    static final int CLOSED = -1;
    /** Nothing, and no close, within the client's deadline: the gateway left the connection hanging. */
    static final int NO_ANSWER = -3;

    /**
     * What one request did and got. {@code sentWhole}: every byte of a well-framed request was written;
     * {@code contentType}: the answer's, null without one; {@code millis}: from connecting to the answer, the close
     * or the hang-up.
     */
    record Attempt(String key, ClientFault fault, byte[] body, boolean sentWhole, int status, byte[] responseBody,
            String contentType, String detail, long millis) {
        Attempt(String key, ClientFault fault, byte[] body, boolean sentWhole, int status, byte[] responseBody,
                String detail) {
            this(key, fault, body, sentWhole, status, responseBody, null, detail, 0);
        }

        Attempt took(long elapsedMillis) {
            return new Attempt(key, fault, body, sentWhole, status, responseBody, contentType, detail, elapsedMillis);
        }

        Attempt relabeled(ClientFault as) {
            return new Attempt(key, as, body, sentWhole, status, responseBody, contentType, detail, millis);
        }

        boolean answered() {
            return status >= 100;
        }
    }

    private static final List<String> BAD_CODINGS = List.of("gzip", "xchunked", "chunked;q=1", "identity");

    private final IntSupplier port;
    private final Duration deadline;
    private final Duration stall;

    /**
     * @param port     the gateway's current port (it changes when the gateway is restarted)
     * @param deadline how long the client waits for an answer or a close
     * @param stall    the longest pause of a slow body
     */
    WireClient(IntSupplier port, Duration deadline, Duration stall) {
        this.port = port;
        this.deadline = deadline;
        this.stall = stall;
    }

    Attempt send(RouteKind route, String key, byte[] body, ClientFault fault, Random random) {
        long started = System.nanoTime();
        return attempt(route, key, body, fault, random)
                .took(Duration.ofNanos(System.nanoTime() - started).toMillis());
    }

    private Attempt attempt(RouteKind route, String key, byte[] body, ClientFault fault, Random random) {
        long written = 0;
        boolean sentWhole = false;
        String detail = "";
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port.getAsInt())) {
            socket.setSoTimeout((int) deadline.toMillis());
            socket.setTcpNoDelay(true);
            OutputStream out = socket.getOutputStream();
            Framed request = frame(route, key, body, fault, random);
            detail = request.detail;
            try {
                switch (fault) {
                    case HANGUP_BEFORE_LAST_BYTE -> {
                        int cut = request.head.length + random.nextInt(request.body.length);
                        write(out, request, cut);
                        hangUp(socket, random);
                        return new Attempt(key, fault, body, false, HUNG_UP, null, detail + " cut at " + cut);
                    }
                    case HANGUP_AT_LAST_BYTE -> {
                        write(out, request, Integer.MAX_VALUE);
                        hangUp(socket, random);
                        return new Attempt(key, fault, body, true, HUNG_UP, null, detail);
                    }
                    case HANGUP_AFTER_LAST_BYTE -> {
                        write(out, request, Integer.MAX_VALUE);
                        Thread.sleep(random.nextInt(30)); // fault injection: a hang-up a few ms after sending
                        hangUp(socket, random);
                        return new Attempt(key, fault, body, true, HUNG_UP, null, detail);
                    }
                    case SLOW_BODY -> {
                        int half = request.head.length + random.nextInt(request.body.length);
                        write(out, request, half);
                        long pause = random.nextLong(stall.toMillis() + 1);
                        Thread.sleep(pause); // fault injection: a client that stalls mid-body
                        detail += " stalled " + pause + "ms";
                        out.write(request.body, half - request.head.length, request.length() - half);
                        out.flush();
                    }
                    default -> write(out, request, Integer.MAX_VALUE);
                }
                written = request.length();
                sentWhole = !fault.malformed;
            } catch (SocketException stoppedReading) {
                detail += " (the gateway stopped reading: " + stoppedReading.getMessage() + ")";
            }
            InputStream in = socket.getInputStream();
            if (fault == ClientFault.HANGUP_AFTER_FIRST_RESPONSE_BYTE) {
                int first = in.read();
                hangUp(socket, random);
                return new Attempt(key, fault, body, sentWhole, first < 0 ? CLOSED : HUNG_UP, null, detail);
            }
            return read(key, fault, body, sentWhole, in, detail);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Attempt(key, fault, body, sentWhole, CLOSED, null, "interrupted");
        } catch (IOException e) {
            return new Attempt(key, fault, body, sentWhole && written > 0, CLOSED, null, detail + " " + e);
        }
    }

    private static Attempt read(String key, ClientFault fault, byte[] body, boolean sentWhole, InputStream in,
            String detail) throws IOException {
        try {
            HttpMessage response = HttpMessage.read(in, true);
            if (response == null) {
                return new Attempt(key, fault, body, sentWhole, CLOSED, null, detail);
            }
            return new Attempt(key, fault, body, sentWhole, response.status(), response.body(),
                    response.header("Content-Type"), detail, 0);
        } catch (SocketTimeoutException e) {
            return new Attempt(key, fault, body, sentWhole, NO_ANSWER, null, detail);
        } catch (EOFException | SocketException incomplete) {
            return new Attempt(key, fault, body, sentWhole, CLOSED, null, detail + " answer cut: " + incomplete);
        }
    }

    private static void write(OutputStream out, Framed request, int upTo) throws IOException {
        int headBytes = Math.min(upTo, request.head.length);
        out.write(request.head, 0, headBytes);
        int bodyBytes = Math.min(upTo - headBytes, request.body.length);
        out.write(request.body, 0, bodyBytes);
        out.flush();
    }

    /** Half the hang-ups are a reset (RST), half an orderly close (FIN). */
    private static void hangUp(Socket socket, Random random) throws IOException {
        if (random.nextBoolean()) {
            socket.setSoLinger(true, 0);
        }
        socket.close();
    }

    private record Framed(byte[] head, byte[] body, String detail) {
        int length() {
            return head.length + body.length;
        }
    }

    /** The head and the body bytes as the fault wants them framed. */
    private static Framed frame(RouteKind route, String key, byte[] body, ClientFault fault, Random random) {
        String head = "POST " + route.path + " HTTP/1.1\r\nHost: gateway\r\n"
                + (fault == ClientFault.MISSING_KEY ? RecordingUpstream.EXCHANGE_HEADER : "Idempotency-Key") + ": "
                + key + "\r\nContent-Type: application/json\r\nConnection: close\r\n";
        String text = new String(body, StandardCharsets.ISO_8859_1);
        String first = "a\r\n" + text.substring(0, 10) + "\r\n";
        String rest = text.substring(10);
        String restSize = Integer.toHexString(rest.length());
        return switch (fault) {
            case BAD_CHUNK_SIZE -> chunkedAs(head, first + "zz\r\n" + rest + "\r\n0\r\n\r\n", "bad chunk size");
            case LF_ONLY_CHUNK_LINES -> chunkedAs(head, first + restSize + "\n" + rest + "\n0\n\n", "LF-only lines");
            case CHUNK_LONGER_THAN_DECLARED -> chunkedAs(head, first + "3\r\n" + rest + "\r\n0\r\n\r\n",
                    "chunk longer than declared");
            case BAD_TRAILER -> chunkedAs(head, first + restSize + "\r\n" + rest
                    + "\r\n0\r\nX-Trailer value without colon\r\n\r\n", "bad trailer");
            case BAD_TRANSFER_ENCODING -> {
                String coding = BAD_CODINGS.get(random.nextInt(BAD_CODINGS.size()));
                yield new Framed(HttpMessage.ascii(head + "Transfer-Encoding: " + coding + "\r\n\r\n"),
                        chunks(body, random), "Transfer-Encoding: " + coding);
            }
            default -> random.nextBoolean()
                    ? new Framed(HttpMessage.ascii(head + "Content-Length: " + body.length + "\r\n\r\n"), body,
                    "content-length")
                    : new Framed(HttpMessage.ascii(head + "Transfer-Encoding: chunked\r\n\r\n"), chunks(body, random),
                    "chunked");
        };
    }

    private static Framed chunkedAs(String head, String body, String detail) {
        return new Framed(HttpMessage.ascii(head + "Transfer-Encoding: chunked\r\n\r\n"), HttpMessage.ascii(body),
                detail);
    }

    /** Well-formed chunked encoding, cut at random places. */
    private static byte[] chunks(byte[] body, Random random) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int at = 0;
        while (at < body.length) {
            int size = Math.min(body.length - at, 1 + random.nextInt(body.length));
            out.writeBytes(HttpMessage.ascii(Integer.toHexString(size) + "\r\n"));
            out.write(body, at, size);
            out.writeBytes(HttpMessage.ascii("\r\n"));
            at += size;
        }
        out.writeBytes(HttpMessage.ascii("0\r\n\r\n"));
        return out.toByteArray();
    }
}
