package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import reactor.core.publisher.Flux;

/** Points 11 and 12: unreachable upstream, body limits, responses larger than what is stored. */
class LimitsAndFailuresIntegrationTest extends GatewayFilterTestBase {

    @Test
    void requestBodyOverTheLimitIs413WhenContentLengthSaysSo() {
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202)));
        client.post().uri("/limited/a").header("Idempotency-Key", newKey())
                .bodyValue(new byte[1025])
                .exchange()
                .expectStatus().isEqualTo(413)
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectBody()
                .jsonPath("$.status.reason").isEqualTo(413)
                .jsonPath("$.status.message").isEqualTo("The request body is larger than the limit of 1024 bytes.");
        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
    }

    @Test
    void requestBodyOverTheLimitIs413WhenStreamedWithoutContentLength() {
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202)));
        Flux<DataBuffer> chunked = Flux.range(0, 8)
                .map(i -> DefaultDataBufferFactory.sharedInstance.wrap(new byte[200]));
        client.post().uri("/limited/b").header("Idempotency-Key", newKey())
                .body(chunked, DataBuffer.class)
                .exchange()
                .expectStatus().isEqualTo(413);
        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
    }

    @Test
    void bodyAtTheLimitIsAccepted() {
        upstream.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202)));
        client.post().uri("/limited/c").header("Idempotency-Key", newKey()).bodyValue(new byte[1024])
                .exchange().expectStatus().isEqualTo(202);
    }

    @Test
    void responseLargerThanTheStorageLimitStreamsWholeButIsNotReplayedAndNotReExecuted() {
        String key = newKey();
        byte[] large = new byte[5000];
        new Random(7).nextBytes(large);
        upstream.stubFor(post(urlEqualTo("/limited/large")).willReturn(aResponse().withStatus(200).withBody(large)));

        EntityExchangeResult<byte[]> first = client.post().uri("/limited/large").header("Idempotency-Key", key)
                .bodyValue("x").exchange().expectStatus().isOk().expectBody().returnResult();
        assertThat(Arrays.equals(first.getResponseBody(), large)).isTrue();

        client.post().uri("/limited/large").header("Idempotency-Key", key).bodyValue("x")
                .exchange()
                .expectStatus().isEqualTo(409)
                .expectBody().jsonPath("$.status.message").value(String.class, message -> assertThat(message)
                        .contains("already processed (status 200)").contains("larger than 2048 bytes"));
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/limited/large")));
    }

    @Test
    void responsesOfManyMegabytesStreamThroughUnchanged() {
        byte[] large = new byte[8 * 1024 * 1024];
        new Random(11).nextBytes(large);
        upstream.stubFor(post(urlEqualTo("/merchants/export")).willReturn(aResponse().withStatus(200).withBody(large)));
        EntityExchangeResult<byte[]> result = client.mutate().codecs(c -> c.defaultCodecs().maxInMemorySize(16 * 1024 * 1024))
                .build().post().uri("/merchants/export").header("Idempotency-Key", newKey()).bodyValue("x")
                .exchange().expectStatus().isOk().expectBody().returnResult();
        assertThat(Arrays.equals(result.getResponseBody(), large)).isTrue();
    }

    @Test
    void unreachableUpstreamReleasesTheReservationSoTheRetryGoesThrough() {
        String key = newKey();
        client.post().uri("/unreachable/merchants").header("Idempotency-Key", key).bodyValue("x")
                .exchange()
                .expectStatus().isEqualTo(502)
                .expectHeader().exists("Retry-After")
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectBody().jsonPath("$.status.reason").isEqualTo(502);

        WireMockServer late = new WireMockServer(options().port(closedPort));
        late.start();
        try {
            late.stubFor(post(anyUrl()).willReturn(aResponse().withStatus(202).withBody("created")));
            client.post().uri("/unreachable/merchants").header("Idempotency-Key", key).bodyValue("x")
                    .exchange().expectStatus().isEqualTo(202).expectBody(String.class).isEqualTo("created");
            client.post().uri("/unreachable/merchants").header("Idempotency-Key", key).bodyValue("x")
                    .exchange().expectStatus().isOk().expectHeader().valueEquals("Idempotency-Replayed", "true");
            late.verify(exactly(1), postRequestedFor(anyUrl()));
        } finally {
            late.stop();
        }
    }

    @Test
    void upstreamTimeoutAfterSendingIsAnUnknownOutcomeNotAFreeRetry() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/hangs")).willReturn(aResponse().withStatus(202)
                .withFixedDelay(8000)));
        client.post().uri("/merchants/hangs").header("Idempotency-Key", key).bodyValue("x")
                .exchange()
                .expectStatus().isEqualTo(504)
                .expectBody().jsonPath("$.status.message").value(String.class,
                        m -> assertThat(m).contains("outcome of the request is unknown"));
        // The upstream may have acted: the retry is not forwarded while the reservation holds.
        client.post().uri("/merchants/hangs").header("Idempotency-Key", key).bodyValue("x")
                .exchange().expectStatus().isEqualTo(409).expectHeader().exists("Retry-After");
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/hangs")));
    }

}
