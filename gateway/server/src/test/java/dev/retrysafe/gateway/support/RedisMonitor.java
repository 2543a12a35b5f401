package dev.retrysafe.gateway.support;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.idempotency.store.redis.RedisProcessQueue;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;

/**
 * Redis's own MONITOR feed, on a connection of its own: every command the server runs, in order, those run inside
 * a script included (MONITOR marks them {@code lua}; they are not round trips).
 */
public final class RedisMonitor implements AutoCloseable {
    private static final Pattern COMMAND = Pattern.compile("\\[\\d+ ([^\\]]+)\\] \"([^\"]*)\"(?: \"([^\"]*)\")?");

    private final Socket socket;
    private final ReactiveStringRedisTemplate markers;
    private final BlockingQueue<String> seen = new LinkedBlockingQueue<>();

    /** @param markers a client of the same Redis, to send the commands that mark where a measurement begins and ends */
    public RedisMonitor(int port, ReactiveStringRedisTemplate markers) throws IOException {
        this.markers = markers;
        socket = new Socket("127.0.0.1", port);
        socket.getOutputStream().write("MONITOR\r\n".getBytes(StandardCharsets.US_ASCII));
        BufferedReader lines = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        Thread reader = new Thread(() -> {
            try {
                for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                    seen.add(line);
                }
            } catch (IOException closed) {
                // monitor closed
            }
        }, "redis-monitor");
        reader.setDaemon(true);
        reader.start();
    }

    /**
     * The commands Redis ran while {@code action} ran and settled, between two marker commands. The store may land
     * a moment after the client has its response, so the end marker is sent once {@code expectedRoundTrips} client
     * commands were seen, or after a second without any (then the caller sees fewer), and anything more still
     * shows up before it.
     */
    public List<String> during(Runnable action, int expectedRoundTrips) throws InterruptedException {
        String begin = mark();
        action.run();
        List<String> commands = new ArrayList<>();
        boolean started = false;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long quietSince = System.nanoTime();
        String end = null;
        boolean inBackgroundScript = false;
        while (System.nanoTime() < deadline) {
            String line = seen.poll(50, TimeUnit.MILLISECONDS);
            if (line == null) {
                boolean quiet = System.nanoTime() - quietSince > TimeUnit.SECONDS.toNanos(1);
                if (started && end == null && (roundTrips(commands).size() >= expectedRoundTrips || quiet)) {
                    end = mark();
                }
                continue;
            }
            quietSince = System.nanoTime();
            if (line.contains(begin)) {
                started = true;
            } else if (end != null && line.contains(end)) {
                return commands;
            } else if (started && !line.contains("marker:")) {
                // The fleet's process polling looks at its directory once per tick, and now and then restores it
                // from the slots, whatever the requests do: not theirs, nor are the commands its scripts run.
                if (!line.contains(" lua]")) {
                    inBackgroundScript = line.contains("\"" + RedisKeyspace.PROCESSES.directory() + "\" \"claim\"")
                            || line.contains("\"" + RedisKeyspace.PROCESSES.directory() + "\" \"restore\"")
                            || line.contains("\"processes\" \"idempotency:{\"")
                            || line.contains(RedisKeyspace.PROCESSES.restoreTurn());
                }
                if (!inBackgroundScript) {
                    commands.add(line);
                }
            }
        }
        throw new AssertionError("Markers not seen; commands so far: " + commands);
    }

    /** The commands a client sent, without those its scripts ran. */
    public static List<String> roundTrips(List<String> commands) {
        return commands.stream().filter(c -> !c.contains(" lua]")).toList();
    }

    /**
     * What was done, without what it was done to: per command, who ran it (a client or a script), its name and,
     * for a script call, the script's SHA. Two requests that do the same work have the same shape.
     */
    public static List<String> shape(List<String> commands) {
        return commands.stream().map(line -> {
            Matcher m = COMMAND.matcher(line);
            if (!m.find()) {
                return line;
            }
            String who = m.group(1).equals("lua") ? "lua" : "client";
            String name = m.group(2).toLowerCase();
            return who + " " + name + (name.equals("evalsha") ? " " + m.group(3) : "");
        }).toList();
    }

    private String mark() {
        String marker = "marker:" + UUID.randomUUID();
        markers.hasKey(marker).block(Duration.ofSeconds(5));
        return marker;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
