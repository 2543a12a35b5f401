package dev.retrysafe.gateway.security;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The runnable gateway with its shipped configuration and Spring Security on: a proxied response reaches the client
 * with exactly the headers the upstream sent (no {@code Cache-Control: no-store}, {@code X-Frame-Options}...), plus
 * only what the gateway documents it adds, on a plain route and a guarded one alike.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "spring.config.additional-location=file:../../config/",
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "management.server.port=0",
                "idempotency.record-counts.enabled=false",
                "idempotency.process-poll.initial-delay=1h"})
class TransparentProxyIntegrationTest {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());
    static final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;

    @DynamicPropertySource
    static void upstreamUri(DynamicPropertyRegistry registry) {
        registry.add("onboarding.uri", () -> "http://127.0.0.1:" + upstream.port());
    }

    @AfterAll
    static void stop() {
        upstream.stop();
    }

    @Test
    void aReadPassesTheUpstreamsHeadersUnchanged() throws Exception {
        upstream.stubFor(get(urlEqualTo("/processes/p-read")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json")
                .withBody("{\"processId\":\"p-read\",\"status\":\"PENDING\"}")));

        HttpResponse<String> direct = send(upstream.port(), HttpRequest.newBuilder().GET(), "/processes/p-read");
        HttpResponse<String> proxied = send(port, HttpRequest.newBuilder().GET(), "/processes/p-read");

        assertThat(proxied.statusCode()).isEqualTo(200);
        assertThat(headers(proxied)).isEqualTo(headers(direct));
        assertThat(proxied.body()).isEqualTo(direct.body());
    }

    @Test
    void aGuardedWriteAndItsReplayCarryOnlyTheUpstreamsHeadersAndIdempotencyReplayed() throws Exception {
        upstream.stubFor(post(urlEqualTo("/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withHeader("Location", "/processes/p-write")
                .withBody("{\"processId\":\"p-write\",\"status\":\"PENDING\"}")));
        String key = UUID.randomUUID().toString();

        HttpResponse<String> direct = send(upstream.port(), write(key), "/merchants");
        HttpResponse<String> first = send(port, write(key), "/merchants");
        HttpResponse<String> replay = send(port, write(key), "/merchants");

        assertThat(first.statusCode()).isEqualTo(202);
        assertThat(headers(first)).isEqualTo(headers(direct));
        Map<String, List<String>> expectedOnReplay = headers(direct);
        expectedOnReplay.remove("location");
        expectedOnReplay.put("idempotency-replayed", List.of("true"));
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(headers(replay)).isEqualTo(expectedOnReplay);
    }

    private static HttpRequest.Builder write(String key) {
        return HttpRequest.newBuilder().header("Idempotency-Key", key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"legalName\":\"ACME\"}"));
    }

    private static HttpResponse<String> send(int port, HttpRequest.Builder request, String path) throws Exception {
        return http.send(request.uri(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Header names lower-cased. Left out: {@code Date}, which names the second each response was made in, and the
     * framing ({@code Content-Length} or {@code Transfer-Encoding}), which is each connection's own.
     */
    private static Map<String, List<String>> headers(HttpResponse<?> response) {
        Map<String, List<String>> headers = new TreeMap<>(response.headers().map());
        headers.keySet().removeAll(List.of("date", "content-length", "transfer-encoding"));
        return headers;
    }
}
