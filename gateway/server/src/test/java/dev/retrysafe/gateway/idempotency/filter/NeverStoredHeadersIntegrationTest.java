package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;

/**
 * Issue 6, point 4: nothing on the never-stored list is ever replayed nor kept in Redis, one class of header at a
 * time. The upstream (WireMock) really sends each header (checked on the wire first); the replay, read on the wire,
 * lacks it; and the record in Redis holds neither its value nor its name. Cookies, configured names,
 * {@code Transfer-Encoding} and {@code Proxy-Connection} reach the filter and only its {@code StorableHeaders} keeps
 * them out; the other hop-by-hop headers and those named in {@code Connection} are also dropped by Spring Cloud
 * Gateway before the filter sees them ({@code StorableHeadersTest} covers the filter's own rule for those).
 */
class NeverStoredHeadersIntegrationTest extends GatewayFilterTestBase {
    static final String MARK = UUID.randomUUID().toString();

    @Autowired
    RecordInspector records;

    static Stream<Arguments> neverStoredByDefault() {
        return Stream.of(
                Arguments.of("Set-Cookie", "session=" + MARK + "; Path=/; HttpOnly"),
                Arguments.of("Set-Cookie2", "legacy=" + MARK + "; Version=1"),
                Arguments.of("Connection", "close"),
                Arguments.of("Keep-Alive", "timeout=5, max=" + MARK.hashCode()),
                Arguments.of("Proxy-Authenticate", "Basic realm=\"" + MARK + "\""),
                Arguments.of("Proxy-Authorization", "Bearer " + MARK),
                Arguments.of("TE", "trailers"),
                Arguments.of("Trailer", "X-Checksum"),
                Arguments.of("Transfer-Encoding", "chunked"),
                Arguments.of("Upgrade", "websocket"),
                Arguments.of("Proxy-Connection", "keep-alive"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("neverStoredByDefault")
    void isNeitherReplayedNorStored(String name, String value) throws IOException {
        String path = "/merchants/never-stored/" + name.toLowerCase(Locale.ROOT);
        upstream.stubFor(post(urlEqualTo(path)).willReturn(ordinaryAnswer().withHeader(name, value)));

        assertReplayedWithout(new Route("onboarding", "Idempotency-Key", newKey()), path, name, value);
    }

    @Test
    void aHeaderTheUpstreamNamesInItsConnectionHeaderIsNeitherReplayedNorStored() throws IOException {
        String path = "/merchants/never-stored/connection-named";
        upstream.stubFor(post(urlEqualTo(path)).willReturn(ordinaryAnswer()
                .withHeader("Connection", "X-Hop-Token")
                .withHeader("X-Hop-Token", MARK)));

        assertReplayedWithout(new Route("onboarding", "Idempotency-Key", newKey()), path, "X-Hop-Token", MARK);
    }

    @Test
    void aHeaderConfiguredAsNeverStoredOnTheRouteIsNeitherReplayedNorStored() throws IOException {
        String path = "/custom/never-stored";
        upstream.stubFor(post(urlEqualTo(path)).willReturn(ordinaryAnswer().withHeader("X-Secret", MARK)));

        assertReplayedWithout(new Route("custom", "X-Request-Key", "k" + MARK.substring(0, 12)), path, "X-Secret",
                MARK);
    }

    private static ResponseDefinitionBuilder ordinaryAnswer() {
        return aResponse().withStatus(202).withHeader("Content-Type", "application/json").withHeader("X-Kept", "yes")
                .withBody("{\"processId\":\"p-1\"}");
    }

    /** The route a request goes to, the header that carries its key there, and the key. */
    private record Route(String id, String keyHeader, String key) {
    }

    private void assertReplayedWithout(Route route, String path, String name, String value) throws IOException {
        String line = "\r\n" + name.toLowerCase(Locale.ROOT) + ": " + value.toLowerCase(Locale.ROOT);
        try {
            assertThat(responseHead(upstream.port(), path, "")).as("the upstream sends it").containsIgnoringCase(line);
        } finally {
            upstream.resetRequests();
        }

        WebTestClient.ResponseSpec first = client.post().uri(path).header(route.keyHeader(), route.key())
                .bodyValue("x").exchange().expectStatus().isEqualTo(202);
        if (name.toLowerCase(Locale.ROOT).startsWith("set-cookie") || name.equals("X-Secret")) {
            first.expectHeader().valueEquals(name, value); // an end-to-end header reaches the one who caused it
        }
        // The replay as it is on the wire (an HTTP client library could add or hide connection-level headers).
        String replay = responseHead(port, path, route.keyHeader() + ": " + route.key() + "\r\n").toLowerCase(Locale.ROOT);
        assertThat(replay).startsWith("http/1.1 20").contains("\r\nidempotency-replayed: true")
                .contains("\r\nx-kept: yes").doesNotContain("\r\n" + name.toLowerCase(Locale.ROOT) + ":");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo(path)).withHeader(route.keyHeader(),
                equalTo(route.key())));

        String scopeHash = new IdempotencyScope("", route.id(), new IdempotencyKey(route.key())).hash();
        String raw = new String(rawResponse(RedisKeyspace.recordKey(scopeHash)), StandardCharsets.ISO_8859_1);
        assertThat(raw).as("raw record").contains("X-Kept").doesNotContain(value);
        RecordView stored = records.find(scopeHash, true).block(Duration.ofSeconds(5));
        assertThat(stored.response().headers()).extracting(h -> h.get(0).toLowerCase(Locale.ROOT))
                .contains("x-kept").doesNotContain(name.toLowerCase(Locale.ROOT));
    }

    /** The stored response field, once the record is completed (the client may be answered a moment before). */
    private byte[] rawResponse(String recordKey) {
        ByteBuffer key = ByteBuffer.wrap(recordKey.getBytes(StandardCharsets.UTF_8));
        return Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .concatMap(tick -> redisConnectionFactory.getReactiveConnection().hashCommands()
                        .hGet(key.duplicate(), ByteBuffer.wrap("response".getBytes(StandardCharsets.UTF_8))))
                .next()
                .map(value -> {
                    byte[] bytes = new byte[value.remaining()];
                    value.get(bytes);
                    return bytes;
                })
                .block(Duration.ofSeconds(10));
    }

    /**
     * The status line and headers of the answer to {@code POST path} with a one-byte body, read from a raw socket:
     * exactly what was sent, nothing added or hidden by a client library.
     */
    private static String responseHead(int port, String path, String extraHeaders) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(5000);
            OutputStream out = socket.getOutputStream();
            out.write(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extraHeaders
                    + "Content-Type: text/plain\r\nContent-Length: 1\r\n\r\nx").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            StringBuilder head = new StringBuilder();
            while (head.indexOf("\r\n\r\n") < 0) {
                int b = in.read();
                if (b < 0) {
                    break;
                }
                head.append((char) b);
            }
            return head.toString();
        }
    }
}
