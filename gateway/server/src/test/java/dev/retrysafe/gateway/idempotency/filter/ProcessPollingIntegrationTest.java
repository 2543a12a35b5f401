package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/** Process-aware retention when nobody asks: the gateway polls the status resource itself, with back-off. */
class ProcessPollingIntegrationTest extends GatewayFilterTestBase {

    @Test
    void anUnfinishedProcessIsPolledUntilItEndsAndThenRetentionStarts() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/proc/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withHeader("Retry-After", "1")
                .withBody("{\"processId\":\"p-polled\",\"status\":\"PENDING\"}")));
        upstream.stubFor(get(urlEqualTo("/proc/processes/p-polled")).inScenario("poll").whenScenarioStateIs("Started")
                .willReturn(aResponse().withStatus(200).withBody("{\"processId\":\"p-polled\",\"status\":\"PENDING\"}"))
                .willSetStateTo("done"));
        upstream.stubFor(get(urlEqualTo("/proc/processes/p-polled")).inScenario("poll").whenScenarioStateIs("done")
                .willReturn(aResponse().withStatus(200).withBody("{\"processId\":\"p-polled\",\"status\":\"FAILED\","
                        + "\"reasons\":[\"taxId is invalid\"]}")));

        client.post().uri("/proc/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202);
        String record = RedisKeyspace.recordKey(new IdempotencyScope("", "process", new IdempotencyKey(key)));
        client.post().uri("/proc/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk().expectHeader().valueEquals("Retry-After", "1");

        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop()
                .concatMap(t -> redis.<String, String>opsForHash().get(record, "process_state").defaultIfEmpty(""))
                .filter("ENDED"::equals).next().block(Duration.ofSeconds(10));

        assertThat(redis.<String, String>opsForHash().get(record, "process_status").block()).isEqualTo("FAILED");
        assertThat(redis.getExpire(record).block()).isBetween(Duration.ofHours(24).minusMinutes(1), Duration.ofHours(24));
        upstream.verify(exactly(2), getRequestedFor(urlEqualTo("/proc/processes/p-polled")));
        client.post().uri("/proc/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk().expectHeader().doesNotExist("Retry-After");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/proc/merchants")));
    }
}
