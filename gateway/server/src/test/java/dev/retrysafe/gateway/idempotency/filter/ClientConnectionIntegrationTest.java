package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** Clients on real sockets that close the connection as soon as they have read the response. */
@ExtendWith(OutputCaptureExtension.class)
class ClientConnectionIntegrationTest extends GatewayFilterTestBase {
    @Autowired
    MeterRegistry meters;


    /**
     * With a Content-Length response, the server considers the exchange done once the last byte is written, and
     * a client that then closes its socket (curl does) cancels whatever the handler still runs: the store call.
     */
    @Test
    void closingTheConnectionRightAfterTheResponseStillStoresIt() throws IOException {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/curl")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withHeader("Content-Length", "22")
                .withBody("{\"processId\":\"p-curl\"}")));

        String response = postAndHangUp("/merchants/curl", key, "{\"legalName\":\"ACME\"}");
        assertThat(response).startsWith("HTTP/1.1 202").contains("{\"processId\":\"p-curl\"}");

        client.post().uri("/merchants/curl").header("Idempotency-Key", key)
                .header("Content-Type", "application/json").bodyValue("{\"legalName\":\"ACME\"}")
                .exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo("{\"processId\":\"p-curl\"}");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/curl")));
    }

    /**
     * Clients that close their socket 0-10 ms after the last byte of a complete request: each request is either
     * forwarded and stored, or (if the gateway saw the hang-up first) still forwarded and stored, because it was
     * received whole. Never reserved and abandoned (UNCERTAIN although the upstream never saw it), never left
     * IN_FLIGHT after it was answered upstream.
     */
    @Test
    void aClientThatHangsUpRightAfterSendingLeavesATruthfulRecord() throws Exception {
        long seed = Long.getLong("hangup.seed", System.nanoTime());
        System.out.println("Hang-up test seed " + seed + " (-Dhangup.seed=N to replay)");
        Random random = new Random(seed);
        List<String> keys = new ArrayList<>();
        List<Integer> delays = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            keys.add(newKey());
            delays.add(random.nextInt(11));
        }
        ExecutorService clients = Executors.newFixedThreadPool(10);
        try {
            List<Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                String key = keys.get(i);
                int delay = delays.get(i);
                sent.add(clients.submit(() -> sendAndHangUp("/accepting/hangup", key, "{\"legalName\":\"ACME\"}",
                        delay)));
            }
            for (Future<?> f : sent) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
        }
        // Settled means: no record of these keys is IN_FLIGHT any more.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        Map<String, String> states;
        do {
            states = new LinkedHashMap<>();
            for (String key : keys) {
                states.put(key, recordState("accepting", key));
            }
        } while (states.containsValue("IN_FLIGHT") && System.nanoTime() < deadline && pause());
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            String what = "request " + i + " closed " + delays.get(i) + " ms after sending (seed " + seed + ")";
            String state = states.get(key);
            assertThat(state).as(() -> what + ": " + record("accepting", key) + ", received upstream "
                    + accepting.received(key) + " times, in flight gauge " + inFlightGauge())
                    .isNotEqualTo("IN_FLIGHT").isNotEqualTo("UNCERTAIN");
            if (state.equals("COMPLETED")) {
                assertThat(accepting.received(key)).as(what + ": stored, so forwarded once").isEqualTo(1);
            } else {
                assertThat(accepting.received(key)).as(what + ": no record, so never forwarded").isZero();
            }
        }
        // A request received whole is forwarded even if its client is gone.
        assertThat(states.values()).as("seed " + seed).containsOnly("COMPLETED");
        // And nothing is left counted as in flight once every record is settled.
        long gaugeDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (inFlightGauge() != 0 && System.nanoTime() < gaugeDeadline && pause()) {
            // polls until the last exchange has ended
        }
        assertThat(inFlightGauge()).as("requests in flight after all settled (seed " + seed + ")").isZero();
    }

    /**
     * A client that hangs up before its replay is written: the replay's write fails on a closed connection after
     * nobody listens any more. That is expected and harmless (the record is untouched); it must not reach the log as
     * an ERROR with a stack trace ("Operator called default onErrorDropped"), once per impatient client.
     */
    @Test
    void aClientThatHangsUpBeforeItsReplayIsWrittenLeavesNoErrorInTheLog(CapturedOutput output) throws Exception {
        String key = newKey();
        String body = "{\"legalName\":\"ACME\"}";
        client.post().uri("/accepting/quiet").header("Idempotency-Key", key)
                .header("Content-Type", "application/json").bodyValue(body)
                .exchange().expectStatus().isEqualTo(202);
        String scope = new IdempotencyScope("", "accepting", new IdempotencyKey(key)).hash();
        int replays = 50;
        for (int i = 0; i < replays; i++) {
            sendAndHangUp("/accepting/quiet", key, body, 0);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (replayLines(output, scope) < replays && System.nanoTime() < deadline && pause()) {
            // every replay logs its line once it has ended, written or not
        }
        assertThat(replayLines(output, scope)).as("replays ended").isEqualTo(replays);
        assertThat(output.getOut()).doesNotContain("onErrorDropped");
        assertThat(output.getOut().lines().filter(line -> line.contains(" ERROR "))).isEmpty();
        assertThat(accepting.received(key)).isEqualTo(1);
    }

    private static long replayLines(CapturedOutput output, String scope) {
        return output.getOut().lines().filter(line -> line.contains("outcome=replay") && line.contains(scope)).count();
    }

    private double inFlightGauge() {
        var gauge = meters.find(IdempotencyMetrics.IN_FLIGHT).gauge();
        return gauge == null ? 0 : gauge.value();
    }

    private static boolean pause() {
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        return true;
    }

    private String recordState(String routeId, String key) {
        String recordKey = RedisKeyspace.recordKey(new IdempotencyScope("", routeId, new IdempotencyKey(key)));
        return redis.<String, String>opsForHash().get(recordKey, "state").defaultIfEmpty("(none)")
                .block(Duration.ofSeconds(5));
    }

    /** The whole record, for a failure message: its lease, attempts and reason tell which path left it. */
    private Map<String, String> record(String routeId, String key) {
        String recordKey = RedisKeyspace.recordKey(new IdempotencyScope("", routeId, new IdempotencyKey(key)));
        Map<String, String> fields = new java.util.TreeMap<>();
        redis.<String, String>opsForHash().entries(recordKey)
                .filter(entry -> !entry.getKey().equals("body"))
                .doOnNext(entry -> fields.put(entry.getKey(), entry.getValue()))
                .then().block(Duration.ofSeconds(5));
        fields.put("(pttl)", String.valueOf(redis.getExpire(recordKey).block(Duration.ofSeconds(5))));
        return fields;
    }

    private Void sendAndHangUp(String path, String key, String body, int delayMillis) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket("127.0.0.1", port)) {
            String request = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: " + key
                    + "\r\nContent-Type: application/json\r\nContent-Length: " + bytes.length + "\r\n\r\n";
            socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
            if (delayMillis > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(delayMillis));
            }
        }
        return null;
    }

    /** Whether a whole response (Content-Length or chunked) has been read. */
    private static boolean complete(String raw) {
        int headerEnd = raw.indexOf("\r\n\r\n");
        if (headerEnd < 0) {
            return false;
        }
        String headers = raw.substring(0, headerEnd).toLowerCase();
        int at = headers.indexOf("content-length:");
        if (at >= 0) {
            int end = headers.indexOf("\r\n", at);
            int length = Integer.parseInt(headers.substring(at + 15, end < 0 ? headers.length() : end).trim());
            return raw.length() - headerEnd - 4 >= length;
        }
        return raw.endsWith("\r\n0\r\n\r\n");
    }

    /** Sends one HTTP/1.1 request, reads exactly one whole response, then closes the socket at once. */
    private String postAndHangUp(String path, String key, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            String request = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: " + key
                    + "\r\nContent-Type: application/json\r\nContent-Length: " + bytes.length + "\r\n\r\n";
            socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream received = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            while (!complete(received.toString(StandardCharsets.ISO_8859_1))) {
                int n = in.read(buffer);
                if (n < 0) {
                    break;
                }
                received.write(buffer, 0, n);
            }
            return received.toString(StandardCharsets.UTF_8);
        }
    }
}
