package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Clients on real sockets that close the connection as soon as they have read the response. */
class ClientConnectionTest extends GatewayFilterTestBase {

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
