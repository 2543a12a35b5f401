package dev.retrysafe.gateway.scale;

import dev.retrysafe.gateway.support.Gateways;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Two gateway instances on one Redis, as behind a load balancer: any instance serves the replay of what the other
 * reserved or completed, and a request waiting on one instance is woken when the other completes.
 */
class TwoInstancesIntegrationTest {
    static EmbeddedRedisServer redis;
    static WireMockServer upstream;
    static ConfigurableApplicationContext first;
    static ConfigurableApplicationContext second;

    @BeforeAll
    static void start() {
        redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        first = gateway();
        second = gateway();
    }

    static ConfigurableApplicationContext gateway() {
        return Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", String.valueOf(redis.port()),
                "idempotency.in-flight-wait", "20s"));
    }

    @AfterAll
    static void stop() {
        second.close();
        first.close();
        upstream.stop();
        redis.stop();
    }

    @BeforeEach
    void reset() {
        upstream.resetAll();
    }

    static Mono<ResponseEntity<String>> send(ConfigurableApplicationContext gateway, String path, String key) {
        return Gateways.client(gateway).post().uri(path).header("Idempotency-Key", key).bodyValue("{\"legalName\":\"ACME\"}")
                .exchangeToMono(r -> r.toEntity(String.class));
    }

    @Test
    void concurrentIdenticalRequestsSplitAcrossBothInstancesReachTheUpstreamOnce() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/split")).willReturn(aResponse().withStatus(202)
                .withBody("{\"processId\":\"p-split\"}").withFixedDelay(500)));

        List<ResponseEntity<String>> responses = Flux.range(0, 40)
                .flatMap(i -> send(i % 2 == 0 ? first : second, "/merchants/split", key), 40)
                .collectList().block(Duration.ofSeconds(30));

        Map<Integer, Long> statuses = responses.stream()
                .collect(Collectors.groupingBy(r -> r.getStatusCode().value(), Collectors.counting()));
        assertThat(statuses).containsEntry(202, 1L).containsEntry(200, 39L);
        assertThat(responses).allSatisfy(r -> assertThat(r.getBody()).isEqualTo("{\"processId\":\"p-split\"}"));
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/split")));
    }

    @Test
    void aWaiterOnOneInstanceIsWokenByTheOtherInstancesCompletion() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/wake")).willReturn(aResponse().withStatus(202)
                .withBody("done").withFixedDelay(500)));
        send(first, "/merchants/wake", key).subscribe();
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .map(t -> upstream.countRequestsMatching(postRequestedFor(urlEqualTo("/merchants/wake")).build()).getCount())
                .filter(n -> n > 0).next().block(Duration.ofSeconds(10));

        long started = System.nanoTime();
        ResponseEntity<String> waiter = send(second, "/merchants/wake", key).block(Duration.ofSeconds(30));
        Duration waited = Duration.ofNanos(System.nanoTime() - started);

        assertThat(waiter.getStatusCode().value()).isEqualTo(200);
        assertThat(waiter.getBody()).isEqualTo("done");
        // in-flight-wait is 20 s: only the pub/sub wake-up from the first instance answers it this early.
        assertThat(waited).isLessThan(Duration.ofSeconds(10));
    }

    @Test
    void aRetryThroughTheOtherInstanceGetsTheReplay() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/retry")).willReturn(aResponse().withStatus(202).withBody("one")));
        assertThat(send(first, "/merchants/retry", key).block().getStatusCode().value()).isEqualTo(202);

        ResponseEntity<String> retry = send(second, "/merchants/retry", key).block(Duration.ofSeconds(30));
        assertThat(retry.getStatusCode().value()).isEqualTo(200);
        assertThat(retry.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(retry.getBody()).isEqualTo("one");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/retry")));
    }
}
