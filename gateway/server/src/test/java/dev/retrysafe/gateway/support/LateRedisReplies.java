package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.support.TcpHop;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * A TCP hop between the gateway and Redis that makes Redis's answer to one command late, for real: once a command
 * carrying every armed marker has passed to Redis (so it runs there), Redis's replies are held back until a command
 * carrying them comes again (the gateway's retry after its store-timeout), then delivered in order. "Written in
 * Redis, answer too late" becomes a state a test can hold, instead of a race it hopes to win.
 */
public final class LateRedisReplies implements AutoCloseable {
    /** A retry that never comes must not hang the test: replies flow again after this. */
    private static final Duration MAX_HOLD = Duration.ofSeconds(10);
    /** Bytes of earlier reads kept, so that a command split over two reads is still recognised. */
    private static final int CARRY = 4096;

    private final TcpHop hop;
    private List<String> markers = List.of();
    private List<String> releaseMarkers = List.of();
    private boolean holding;
    private int matches;

    public LateRedisReplies(int redisPort) throws IOException {
        hop = new TcpHop(redisPort, CommandWatch::new);
    }

    public int port() {
        return hop.port();
    }

    /** The next command carrying all of these gets its reply late: after the next one carrying them has passed. */
    public synchronized void holdRepliesAfter(String... commandMarkers) {
        holdRepliesAfter(List.of(commandMarkers), List.of(commandMarkers));
    }

    /**
     * As above, the replies released by the next command carrying all of {@code retryMarkers} instead: for a retry
     * that begins with another command than the held one. Its reply is queued behind the held ones, so the held
     * command itself would never be sent again before {@link #MAX_HOLD}.
     */
    public synchronized void holdRepliesAfter(List<String> commandMarkers, List<String> retryMarkers) {
        markers = List.copyOf(commandMarkers);
        releaseMarkers = List.copyOf(retryMarkers);
        holding = false;
        matches = 0;
    }

    /** How many commands carrying the armed markers reached Redis: 2 once the held one was retried. */
    public synchronized int matches() {
        return matches;
    }

    /** Watches one connection's commands; decides before a command reaches Redis, so its reply cannot escape. */
    private final class CommandWatch implements TcpHop.Tap {
        private byte[] carried = new byte[0];

        @Override
        public void passing(byte[] bytes, int length) {
            byte[] window = Arrays.copyOf(carried, carried.length + length);
            System.arraycopy(bytes, 0, window, carried.length, length);
            carried = armedCommand(window) ? new byte[0]
                    : Arrays.copyOfRange(window, Math.max(0, window.length - CARRY), window.length);
        }
    }

    private synchronized boolean armedCommand(byte[] window) {
        // One char per byte: the markers are ASCII, the rest of the command may be anything.
        String command = new String(window, StandardCharsets.ISO_8859_1);
        boolean held = carries(command, markers);
        boolean retry = holding && carries(command, releaseMarkers);
        if (!held && !retry) {
            return false;
        }
        if (held) {
            matches++;
        }
        if (matches == 1 && !holding) {
            holding = true;
            hop.holdFromTarget(MAX_HOLD);
            return true;
        }
        if (retry) {
            holding = false;
            hop.releaseFromTarget();
        }
        if (matches == 2) {
            markers = List.of();
        }
        return true;
    }

    private static boolean carries(String command, List<String> markers) {
        return !markers.isEmpty() && markers.stream().allMatch(command::contains);
    }

    @Override
    public void close() {
        hop.close();
    }
}
