package dev.retrysafe.gateway.faults;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.support.Gateways;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A client that opens a connection and sends half a header section, then nothing, is not the filter's to answer
 * (no request exists yet): {@code server.netty.idle-timeout}, set in the shipped configuration, closes it. The
 * timeout must not cut a request that is waiting for a slow upstream: that would turn a normal slow write into an
 * unknown outcome.
 */
class IdleClientIntegrationTest {
    static final Duration IDLE_TIMEOUT = Duration.ofSeconds(1);
    static WireMockServer upstream;
    static ConfigurableApplicationContext gateway;

    @BeforeAll
    static void start() {
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "server.netty.idle-timeout", IDLE_TIMEOUT.toMillis() + "ms",
                "idempotency.embedded-redis.enabled", "true",
                "idempotency.embedded-redis.directory", "target/embedded-redis"));
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(gateway, upstream == null ? null : upstream::stop);
    }

    @Test
    void theShippedConfigurationClosesConnectionsThatStopSendingTheirHeaders() throws IOException {
        String shipped = Files.readString(Path.of("../../config/application.yml"));
        assertThat(shipped).containsPattern("netty:\\s*\\n\\s*(#[^\\n]*\\n\\s*)*idle-timeout: 60s");
    }

    @Test
    void aHalfSentHeaderSectionIsClosedAfterTheIdleTimeout() throws IOException {
        int port = gateway.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            socket.setSoTimeout((int) IDLE_TIMEOUT.multipliedBy(10).toMillis());
            OutputStream out = socket.getOutputStream();
            out.write("POST /merchants/idle HTTP/1.1\r\nHost: gateway\r\nIdempotency-K".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            // Closed by the server (end of stream or a reset) well before the read's own 10 s timeout.
            readToEnd(in);
        }
    }

    @Test
    void aRequestWaitingForASlowUpstreamIsNotCut() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlPathEqualTo("/merchants/slow")).willReturn(aResponse().withStatus(202)
                .withBody("created").withFixedDelay((int) IDLE_TIMEOUT.multipliedBy(3).toMillis())));
        int status = Gateways.client(gateway).post().uri("/merchants/slow").header("Idempotency-Key", key)
                .bodyValue("x").exchangeToMono(r -> r.releaseBody().thenReturn(r.statusCode().value()))
                .block(Duration.ofSeconds(30));
        assertThat(status).isEqualTo(202);
    }

    private static void readToEnd(InputStream in) {
        try {
            while (in.read() >= 0) {
                // whatever the server says before it closes
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the connection was still open after " + IDLE_TIMEOUT.multipliedBy(10), e);
        } catch (IOException reset) {
            // closed with a reset: closed all the same
        }
    }
}
