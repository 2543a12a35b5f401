package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.support.RedisMonitor;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * Redis round trips per request, as Redis's own MONITOR sees them (commands run inside a script are marked
 * {@code lua} there and are not round trips): a first write is two (reserve; store plus wake-up in one script),
 * a replay one, a mismatch one.
 */
class RedisRoundTripsIntegrationTest extends GatewayFilterTestBase {
    @Autowired
    EmbeddedRedisServer redisServer;

    private RedisMonitor monitor;

    @BeforeEach
    void startMonitor() throws IOException {
        monitor = new RedisMonitor(redisServer.port(), redis);
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
        List<String> firstWrite = roundTripsDuring(() -> client.post().uri("/merchants/trips")
                .header("Idempotency-Key", key).bodyValue("x").exchange().expectStatus().isEqualTo(202), 2);
        assertThat(firstWrite).as("first write").hasSize(2).allSatisfy(c -> assertThat(c).containsIgnoringCase("\"evalsha\""));

        List<String> replay = roundTripsDuring(() -> client.post().uri("/merchants/trips")
                .header("Idempotency-Key", key).bodyValue("x").exchange().expectStatus().isOk(), 1);
        assertThat(replay).as("replay").hasSize(1);

        List<String> mismatch = roundTripsDuring(() -> client.post().uri("/merchants/trips")
                .header("Idempotency-Key", key).bodyValue("other").exchange().expectStatus().isEqualTo(409), 1);
        assertThat(mismatch).as("mismatch").hasSize(1);
    }

    private List<String> roundTripsDuring(Runnable request, int expected) throws InterruptedException {
        return RedisMonitor.roundTrips(monitor.during(request, expected));
    }
}
