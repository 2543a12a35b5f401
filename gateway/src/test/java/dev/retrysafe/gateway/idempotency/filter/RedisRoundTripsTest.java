package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.embedded.EmbeddedRedisServer;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * Redis round trips per request, as Redis's own MONITOR sees them (commands run inside a script are marked
 * {@code lua} there and are not round trips): a first write is two (reserve; store plus wake-up in one script),
 * a replay one, a mismatch one.
 */
class RedisRoundTripsTest extends GatewayFilterTestBase {
    @Autowired
    EmbeddedRedisServer redisServer;

    private Socket monitor;
    private final BlockingQueue<String> seen = new LinkedBlockingQueue<>();

    @BeforeEach
    void startMonitor() throws IOException {
        monitor = new Socket("127.0.0.1", redisServer.port());
        monitor.getOutputStream().write("MONITOR\r\n".getBytes(StandardCharsets.US_ASCII));
        BufferedReader lines = new BufferedReader(new InputStreamReader(monitor.getInputStream(), StandardCharsets.UTF_8));
        Thread reader = new Thread(() -> {
            try {
                for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                    seen.add(line);
                }
            } catch (IOException closed) {
                // test over
            }
        }, "redis-monitor");
        reader.setDaemon(true);
        reader.start();
    }

    @AfterEach
    void stopMonitor() throws IOException {
        monitor.close();
    }

    @Test
    void firstWriteTwoReplayOneMismatchOne() throws InterruptedException {
        upstream.stubFor(post(urlEqualTo("/merchants/trips")).willReturn(aResponse().withStatus(202).withBody("ok")));
        // Warm up: the scripts get loaded (a first EVALSHA answers NOSCRIPT and falls back to EVAL).
        String warm = newKey();
        client.post().uri("/merchants/trips").header("Idempotency-Key", warm).bodyValue("x").exchange().expectStatus().isEqualTo(202);
        client.post().uri("/merchants/trips").header("Idempotency-Key", warm).bodyValue("x").exchange().expectStatus().isOk();

        String key = newKey();
        List<String> firstWrite = commandsDuring(() -> client.post().uri("/merchants/trips")
                .header("Idempotency-Key", key).bodyValue("x").exchange().expectStatus().isEqualTo(202), 2);
        assertThat(firstWrite).as("first write").hasSize(2).allSatisfy(c -> assertThat(c).containsIgnoringCase("\"evalsha\""));

        List<String> replay = commandsDuring(() -> client.post().uri("/merchants/trips")
                .header("Idempotency-Key", key).bodyValue("x").exchange().expectStatus().isOk(), 1);
        assertThat(replay).as("replay").hasSize(1);

        List<String> mismatch = commandsDuring(() -> client.post().uri("/merchants/trips")
                .header("Idempotency-Key", key).bodyValue("other").exchange().expectStatus().isEqualTo(409), 1);
        assertThat(mismatch).as("mismatch").hasSize(1);
    }

    /**
     * The client commands Redis received while {@code request} ran and settled, between two marker commands. The
     * store may land a moment after the client has its response, so the end marker is sent once {@code expected}
     * commands were seen (or after a bounded wait), and anything more still shows up before it.
     */
    private List<String> commandsDuring(Runnable request, int expected) throws InterruptedException {
        String begin = mark();
        request.run();
        List<String> commands = new ArrayList<>();
        boolean started = false;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        String end = null;
        while (System.nanoTime() < deadline) {
            String line = seen.poll(50, TimeUnit.MILLISECONDS);
            if (line == null) {
                if (started && end == null && commands.size() >= expected) {
                    end = mark();
                }
                continue;
            }
            if (line.contains(begin)) {
                started = true;
            } else if (end != null && line.contains(end)) {
                return commands;
            } else if (started && !line.contains(" lua]") && !line.contains("marker:")) {
                commands.add(line);
            }
        }
        throw new AssertionError("Markers not seen; commands so far: " + commands);
    }

    private String mark() {
        String marker = "marker:" + UUID.randomUUID();
        redis.hasKey(marker).block(Duration.ofSeconds(5));
        return marker;
    }
}
