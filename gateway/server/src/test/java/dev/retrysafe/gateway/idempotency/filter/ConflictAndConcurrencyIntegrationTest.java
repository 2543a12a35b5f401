package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.response.GatewayError;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** Points 8 and 9: mismatches in every state, parallel duplicates, waiting and its limit. */
class ConflictAndConcurrencyIntegrationTest extends GatewayFilterTestBase {

    @Test
    void otherPayloadWithACompletedKeyIs409AndNotForwarded() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants")).willReturn(aResponse().withStatus(202).withBody("ok")));
        client.post().uri("/merchants").header("Idempotency-Key", key).contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"legalName\":\"ACME\",\"settings\":{\"currency\":\"BRL\"}}")
                .exchange().expectStatus().isEqualTo(202);

        client.post().uri("/merchants").header("Idempotency-Key", key).contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"legalName\":\"ACME\",\"settings\":{\"currency\":\"USD\"}}")
                .exchange()
                .expectStatus().isEqualTo(409)
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectBody()
                .jsonPath("$.status.status").isEqualTo("FAILED")
                .jsonPath("$.status.reason").isEqualTo(409)
                .jsonPath("$.status.message").isEqualTo("The idempotency key was already used with a different payload.");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants")));
    }

    @Test
    void otherPayloadWhileTheFirstIsInFlightIs409AtOnce() throws Exception {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/slow")).willReturn(aResponse().withStatus(202)
                .withBody("ok").withFixedDelay(1500)));
        WebClient web = WebClient.create("http://127.0.0.1:" + port);
        CompletableFuture<ResponseEntity<String>> first = web.post().uri("/merchants/slow")
                .header("Idempotency-Key", key).bodyValue("first").retrieve().toEntity(String.class).toFuture();
        awaitUpstreamRequests("/merchants/slow", 1);

        client.post().uri("/merchants/slow").header("Idempotency-Key", key).bodyValue("second")
                .exchange().expectStatus().isEqualTo(409)
                .expectBody().jsonPath("$.status.message").isEqualTo(GatewayError.PAYLOAD_MISMATCH_MESSAGE);
        // A mismatch is answered while the first request is still in flight: it does not wait.
        assertThat(first).isNotDone();
        assertThat(first.get(10, java.util.concurrent.TimeUnit.SECONDS).getStatusCode().value()).isEqualTo(202);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/slow")));
    }

    @Test
    void identicalParallelRequestsReachTheUpstreamOnceAndAllSeeTheSameResult() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/parallel")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withBody("{\"processId\":\"p-1\",\"status\":\"PENDING\"}").withFixedDelay(400)));
        WebClient web = WebClient.create("http://127.0.0.1:" + port);

        List<ResponseEntity<String>> responses = Flux.range(0, 30)
                .flatMap(i -> web.post().uri("/merchants/parallel").header("Idempotency-Key", key)
                        .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"legalName\":\"ACME\"}")
                        .retrieve().toEntity(String.class), 30)
                .collectList().block(Duration.ofSeconds(20));

        Map<Integer, Long> byStatus = responses.stream().collect(Collectors.groupingBy(
                r -> r.getStatusCode().value(), Collectors.counting()));
        assertThat(byStatus).containsEntry(202, 1L).containsEntry(200, 29L);
        assertThat(responses).allSatisfy(r -> assertThat(r.getBody()).isEqualTo("{\"processId\":\"p-1\",\"status\":\"PENDING\"}"));
        assertThat(responses).filteredOn(r -> r.getStatusCode().value() == 200)
                .allSatisfy(r -> assertThat(r.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true"));
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/parallel")));
    }

    @Test
    void waitersGiveUpAfterInFlightWaitWith409AndRetryAfter() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/short-wait/slow")).willReturn(aResponse().withStatus(202)
                .withBody("done").withFixedDelay(2000)));
        WebClient web = WebClient.create("http://127.0.0.1:" + port);
        Mono<ResponseEntity<String>> first = web.post().uri("/short-wait/slow").header("Idempotency-Key", key)
                .bodyValue("same").retrieve().toEntity(String.class).cache();
        first.subscribe();
        awaitUpstreamRequests("/short-wait/slow", 1);

        List<ResponseEntity<String>> waiters = Flux.range(0, 10)
                .flatMap(i -> web.post().uri("/short-wait/slow").header("Idempotency-Key", key).bodyValue("same")
                        .exchangeToMono(r -> r.toEntity(String.class)))
                .collectList().block(Duration.ofSeconds(10));
        assertThat(waiters).allSatisfy(r -> {
            assertThat(r.getStatusCode()).isEqualTo(HttpStatusCode.valueOf(409));
            assertThat(r.getHeaders().getFirst("Retry-After")).isEqualTo("1");
            assertThat(r.getBody()).contains("still being processed");
        });

        assertThat(first.block(Duration.ofSeconds(10)).getStatusCode().value()).isEqualTo(202);
        client.post().uri("/short-wait/slow").header("Idempotency-Key", key).bodyValue("same")
                .exchange().expectStatus().isOk().expectBody(String.class).isEqualTo("done");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/short-wait/slow")));
    }

    @Test
    void aWaiterIsWokenByTheSettleSignalNotByItsTimeout() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/long-wait/wake")).willReturn(aResponse().withStatus(202)
                .withBody("done").withFixedDelay(300)));
        WebClient web = WebClient.create("http://127.0.0.1:" + port);
        web.post().uri("/long-wait/wake").header("Idempotency-Key", key)
                .bodyValue("same").retrieve().toEntity(String.class).subscribe();
        awaitUpstreamRequests("/long-wait/wake", 1);

        long started = System.nanoTime();
        ResponseEntity<String> waiter = web.post().uri("/long-wait/wake").header("Idempotency-Key", key)
                .bodyValue("same").retrieve().toEntity(String.class).block(Duration.ofSeconds(30));
        Duration waited = Duration.ofNanos(System.nanoTime() - started);

        assertThat(waiter.getStatusCode().value()).isEqualTo(200);
        assertThat(waiter.getBody()).isEqualTo("done");
        // in-flight-wait is 20 s on this route: an answer well before it means the settle signal woke the
        // waiter (a lost signal would hold it the full 20 s).
        assertThat(waited).isLessThan(Duration.ofSeconds(10));
    }

    /** Polls WireMock's journal (bounded) until the upstream has received the first request. */
    static void awaitUpstreamRequests(String path, int count) {
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .map(tick -> upstream.countRequestsMatching(postRequestedFor(urlEqualTo(path)).build()).getCount())
                .filter(n -> n >= count).next().timeout(Duration.ofSeconds(10)).block();
    }
}
