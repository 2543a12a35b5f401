package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.support.WritePausedRedis;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import reactor.core.publisher.Flux;

/**
 * Read-your-writes on process end: a status read through the gateway that reports a terminal status is answered
 * only once the end is recorded, so a retry right after it gets a replay without {@code Retry-After}. Redis writes
 * are paused while the status is read, which makes the order visible: while the gateway's write is held, not one
 * byte of the status response may have reached the client.
 */
class ProcessEndReadYourWritesIntegrationTest extends GatewayFilterTestBase {
    /** Sent by the test's own status reads only: the gateway's poller keeps seeing PENDING and records nothing. */
    static final String READER = "X-Status-Reader";

    @Autowired
    EmbeddedRedisServer redisServer;

    @Autowired
    IdempotencyEvents events;

    @Test
    void aRetryRightAfterAStatusReadShowedCompletedIsReplayedWithoutRetryAfter() throws Exception {
        String key = startProcess("p-ryw");

        String status;
        try (WritePausedRedis paused = new WritePausedRedis(redisServer.port(), Duration.ofSeconds(10));
                Socket reader = new Socket("127.0.0.1", port)) {
            reader.getOutputStream().write(("GET /proc/processes/p-ryw HTTP/1.1\r\nHost: gateway\r\n" + READER
                    + ": client\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            paused.awaitHeldScript(Duration.ofSeconds(5));
            assertThat(reader.getInputStream().available())
                    .as("bytes of the status response released before the process end was recorded").isZero();
            paused.close(); // the held write runs, then the response may go
            status = readToEnd(reader);
        }

        assertThat(status).startsWith("HTTP/1.1 200").contains("\"status\":\"COMPLETED\"");
        client.post().uri("/proc/merchants/ryw").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk().expectHeader().doesNotExist("Retry-After");
    }

    @Test
    void aStatusReadWhoseEndCannotBeRecordedInTimeIsAnsweredAnywayAndReported() throws Exception {
        String key = startProcess("p-unrecorded");
        double before = events.count("process-end-unrecorded");

        try (WritePausedRedis paused = new WritePausedRedis(redisServer.port(), Duration.ofSeconds(10))) {
            // Held no longer than the store timeout (1 s), then answered as the upstream answered.
            client.get().uri("/proc/processes/p-unrecorded").header(READER, "client").exchange()
                    .expectStatus().isOk().expectBody().jsonPath("$.status").isEqualTo("COMPLETED");

            assertThat(events.count("process-end-unrecorded")).isEqualTo(before + 1);
            String record = RedisKeyspace.recordKey(
                    new IdempotencyScope("", "process", new IdempotencyKey(key)));
            assertThat(paused.hget(record, "process_state")).isNotEqualTo("ENDED");
        }
    }

    /** A guarded write whose 202 names the process; status reads through the gateway see it COMPLETED. */
    private String startProcess(String processId) {
        String key = newKey();
        String path = "/proc/merchants/" + processId.substring(2);
        upstream.stubFor(post(urlEqualTo(path)).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withHeader("Retry-After", "1")
                .withBody("{\"processId\":\"" + processId + "\",\"status\":\"PENDING\"}")));
        upstream.stubFor(get(urlEqualTo("/proc/processes/" + processId)).atPriority(2).willReturn(aResponse()
                .withStatus(200).withHeader("Content-Type", "application/json")
                .withBody("{\"processId\":\"" + processId + "\",\"status\":\"PENDING\"}")));
        upstream.stubFor(get(urlEqualTo("/proc/processes/" + processId)).atPriority(1)
                .withHeader(READER, equalTo("client")).willReturn(aResponse().withStatus(200)
                        .withHeader("Content-Type", "application/json")
                        .withBody("{\"processId\":\"" + processId + "\",\"status\":\"COMPLETED\"}")));
        client.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202);
        // The 202 reaches the client while the gateway stores it and links the process: a status read before the
        // link exists would find no record to end.
        String link = RedisKeyspace.PROCESS_LINK_PREFIX + "process:" + processId;
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop().concatMap(tick -> redis.hasKey(link))
                .filter(Boolean::booleanValue).next().block(Duration.ofSeconds(10));
        return key;
    }

    private static String readToEnd(Socket socket) throws Exception {
        socket.setSoTimeout(10_000);
        InputStream in = socket.getInputStream();
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
}
