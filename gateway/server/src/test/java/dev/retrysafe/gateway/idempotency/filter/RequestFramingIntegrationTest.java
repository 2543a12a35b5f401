package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.support.RawHttpClient;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.support.RawHttpClient.Response;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A request is forwarded only as it was framed. Broken chunked framing after valid headers used to end the body
 * stream as if it were complete: the upstream got the body cut short and the record was COMPLETED, so the client's
 * correct retry got 409. A Transfer-Encoding other than {@code chunked} was read as "no body" and forwarded empty.
 */
class RequestFramingIntegrationTest extends GatewayFilterTestBase {
    static final Duration DEADLINE = Duration.ofSeconds(15);
    static final String BODY = "{\"legalName\":\"ACME\",\"taxId\":\"ACME12345\"}";

    RawHttpClient raw;

    @BeforeEach
    void rawClient() {
        raw = new RawHttpClient(port);
    }

    /** Chunked bodies that start well and then break, each after a first valid chunk. */
    static Map<String, String> brokenChunkedBodies() {
        String first = Integer.toHexString(10) + "\r\n" + BODY.substring(0, 10) + "\r\n";
        String rest = BODY.substring(10);
        Map<String, String> bodies = new LinkedHashMap<>();
        bodies.put("bad chunk size", first + "zz\r\n" + rest + "\r\n0\r\n\r\n");
        bodies.put("LF-only chunk lines", first + Integer.toHexString(rest.length()) + "\n" + rest + "\n0\n\n");
        bodies.put("chunk data longer than declared", first + "3\r\n" + rest + "\r\n0\r\n\r\n");
        bodies.put("bad trailer", first + Integer.toHexString(rest.length()) + "\r\n" + rest
                + "\r\n0\r\nX-Trailer value without colon\r\n\r\n");
        return bodies;
    }

    @Test
    void aBrokenChunkedBodyIsRefusedBeforeAnythingIsReservedAndTheRetryGoesThrough() {
        for (Map.Entry<String, String> broken : brokenChunkedBodies().entrySet()) {
            String key = newKey();
            int forwardedBefore = accepting.requests();
            Response response = raw.send(head("/accepting/framing", key, "Transfer-Encoding: chunked"),
                    broken.getValue().getBytes(StandardCharsets.US_ASCII), DEADLINE);

            assertThat(response.status()).as(broken.getKey()).isIn(-1, 400);
            if (response.status() == 400) {
                assertThat(response.bodyText()).as(broken.getKey()).contains("\"reason\":400")
                        .contains("The request body is malformed");
                assertThat(response.header("Connection")).as(broken.getKey()).isEqualTo("close");
            }
            assertThat(accepting.requests()).as(broken.getKey() + ": upstream called").isEqualTo(forwardedBefore);
            assertThat(recordExists("accepting", key)).as(broken.getKey() + ": record left").isFalse();

            Response retry = raw.send(head("/accepting/framing", key, "Content-Length: " + BODY.length()),
                    BODY.getBytes(StandardCharsets.US_ASCII), DEADLINE);
            assertThat(retry.status()).as(broken.getKey() + ": the correct retry").isEqualTo(202);
            assertThat(accepting.requests()).isEqualTo(forwardedBefore + 1);
        }
    }

    @Test
    void aBrokenChunkedBodyOnAPlainRouteNeverReachesTheUpstreamWhole() {
        for (Map.Entry<String, String> broken : brokenChunkedBodies().entrySet()) {
            upstream.resetRequests();
            Response response = raw.send(head("/plain/framing", newKey(), "Transfer-Encoding: chunked"),
                    broken.getValue().getBytes(StandardCharsets.US_ASCII), DEADLINE);
            assertThat(response.status()).as(broken.getKey()).isIn(-1, 400);
            upstream.findAll(anyRequestedFor(anyUrl())).forEach(received ->
                    assertThat(received.getBodyAsString()).as(broken.getKey()).isNotEqualTo(BODY));
        }
    }

    @Test
    void aTransferEncodingOtherThanChunkedIs400OnEveryRouteAndNothingIsForwarded() {
        for (String encoding : List.of("xchunked", "gzip", "identity", "chunked;q=1", "\"chunked\"", "gzip, chunked",
                "chunked, chunked", "chunked\r\nTransfer-Encoding: gzip")) {
            for (String path : List.of("/accepting/te", "/plain/te")) {
                String key = newKey();
                int forwardedBefore = accepting.requests();
                upstream.resetRequests();
                String chunked = Integer.toHexString(BODY.length()) + "\r\n" + BODY + "\r\n0\r\n\r\n";
                Response response = raw.send(head(path, key, "Transfer-Encoding: " + encoding),
                        chunked.getBytes(StandardCharsets.US_ASCII), DEADLINE);
                String what = path + " with Transfer-Encoding: " + encoding;
                assertThat(response.status()).as(what).isEqualTo(400);
                assertThat(response.bodyText()).as(what)
                        .contains("The Transfer-Encoding header must be exactly \\\"chunked\\\"");
                assertThat(response.header("Connection")).as(what).isEqualTo("close");
                assertThat(accepting.requests()).as(what).isEqualTo(forwardedBefore);
                assertThat(upstream.findAll(anyRequestedFor(anyUrl()))).as(what).isEmpty();
                assertThat(recordExists("accepting", key)).as(what).isFalse();
            }
        }
    }

    @Test
    void aWellFramedChunkedBodyStillGoesThroughAndIsReplayed() {
        String key = newKey();
        String chunked = "5\r\n" + BODY.substring(0, 5) + "\r\n" + Integer.toHexString(BODY.length() - 5) + "\r\n"
                + BODY.substring(5) + "\r\n0\r\nX-Trailer: fine\r\n\r\n";
        Response first = raw.send(head("/accepting/chunked", key, "Transfer-Encoding: Chunked"),
                chunked.getBytes(StandardCharsets.US_ASCII), DEADLINE);
        assertThat(first.status()).isEqualTo(202);
        Response replay = raw.send(head("/accepting/chunked", key, "Content-Length: " + BODY.length()),
                BODY.getBytes(StandardCharsets.US_ASCII), DEADLINE);
        assertThat(replay.status()).isEqualTo(200);
        assertThat(replay.header("Idempotency-Replayed")).isEqualTo("true");
    }

    private static String head(String path, String key, String framing) {
        return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: " + key
                + "\r\nContent-Type: application/json\r\n" + framing + "\r\n\r\n";
    }

    private boolean recordExists(String routeId, String key) {
        String recordKey = RedisKeyspace.recordKey(new IdempotencyScope("", routeId, new IdempotencyKey(key)));
        return Boolean.TRUE.equals(redis.hasKey(recordKey).block(Duration.ofSeconds(5)));
    }
}
