package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class StoredResponseCodecTest {

    private static final StoredResponse TYPICAL = new StoredResponse(202,
            List.of(new ResponseHeader("Content-Type", "application/json"),
                    new ResponseHeader("Link", "</a>; rel=next"),
                    new ResponseHeader("X-Trace", "1"),
                    new ResponseHeader("Link", "</b>; rel=prev")),
            "{\"merchantId\":\"m-1\"}".getBytes(StandardCharsets.UTF_8), false);

    private static StoredResponse roundTrip(StoredResponse response) {
        return StoredResponseCodec.decode(StoredResponseCodec.encode(response));
    }

    @Test
    void roundTripsStatusHeadersInOrderWithRepeatedNamesAndBody() {
        StoredResponse decoded = roundTrip(TYPICAL);

        assertThat(decoded).isEqualTo(TYPICAL);
        assertThat(decoded.status()).isEqualTo(202);
        assertThat(decoded.headers()).containsExactlyElementsOf(TYPICAL.headers());
        assertThat(decoded.body()).isEqualTo(TYPICAL.body());
        assertThat(decoded.bodyOmitted()).isFalse();
    }

    @Test
    void roundTripsUtf8HeaderNamesAndValues() {
        StoredResponse response = new StoredResponse(200,
                List.of(new ResponseHeader("X-Merchant-Name", "Bäckerei Müller — 東京 🍞"),
                        new ResponseHeader("X-Empty", "")),
                new byte[] {1}, false);

        assertThat(roundTrip(response)).isEqualTo(response);
        assertThat(roundTrip(response).headers().get(0).value()).isEqualTo("Bäckerei Müller — 東京 🍞");
    }

    @Test
    void roundTripsAnEmptyBodyAndNoHeaders() {
        StoredResponse response = new StoredResponse(204, List.of(), new byte[0], false);

        StoredResponse decoded = roundTrip(response);

        assertThat(decoded).isEqualTo(response);
        assertThat(decoded.body()).isEmpty();
        assertThat(decoded.headers()).isEmpty();
    }

    @Test
    void roundTripsAOneMebibyteBinaryBodyWithEveryByteValue() {
        byte[] body = new byte[1024 * 1024];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i * 31 + (i >>> 8));
        }
        for (int b = 0; b < 256; b++) {
            body[b] = (byte) b; // every byte value, 0x00..0xFF, at least once
        }
        StoredResponse response = new StoredResponse(200,
                List.of(new ResponseHeader("Content-Type", "application/octet-stream")), body, false);

        StoredResponse decoded = roundTrip(response);

        assertThat(decoded.body()).hasSize(1024 * 1024);
        assertThat(Arrays.equals(decoded.body(), body)).isTrue();
        assertThat(decoded).isEqualTo(response);
    }

    @Test
    void roundTripsTheBodyOmittedFlag() {
        StoredResponse omitted = new StoredResponse(201,
                List.of(new ResponseHeader("Location", "/merchants/1")), new byte[0], true);

        StoredResponse decoded = roundTrip(omitted);

        assertThat(decoded.bodyOmitted()).isTrue();
        assertThat(decoded).isEqualTo(omitted);
        assertThat(roundTrip(TYPICAL).bodyOmitted()).isFalse();
    }

    @Test
    void roundTripsStatusesAcrossTheWholeRange() {
        for (int status : new int[] {100, 200, 409, 500, 599, 999}) {
            StoredResponse response = new StoredResponse(status, List.of(), new byte[0], false);
            assertThat(roundTrip(response).status()).isEqualTo(status);
        }
    }

    @Test
    void anUnknownVersionFailsInsteadOfBeingMisread() {
        byte[] encoded = StoredResponseCodec.encode(TYPICAL);
        encoded[0] = 2;

        assertThatIllegalStateException().isThrownBy(() -> StoredResponseCodec.decode(encoded))
                .withMessageContaining("2");
    }

    @Test
    void aTruncatedBlobFailsWithIllegalStateExceptionAtEveryCut() {
        byte[] encoded = StoredResponseCodec.encode(TYPICAL);

        for (int length = 0; length < encoded.length; length++) {
            byte[] truncated = Arrays.copyOf(encoded, length);
            assertThatIllegalStateException()
                    .as("truncated to %d of %d bytes", length, encoded.length)
                    .isThrownBy(() -> StoredResponseCodec.decode(truncated));
        }
    }

    @Test
    void anEmptyBlobFailsWithIllegalStateException() {
        assertThatIllegalStateException().isThrownBy(() -> StoredResponseCodec.decode(new byte[0]));
    }

    @Test
    void aDamagedLengthFailsWithIllegalStateExceptionInsteadOfAllocatingIt() {
        byte[] encoded = StoredResponseCodec.encode(TYPICAL);
        // Bytes 4..7 hold the header count: make it negative, then huge.
        for (int damaged : new int[] {-1, Integer.MAX_VALUE}) {
            byte[] copy = encoded.clone();
            java.nio.ByteBuffer.wrap(copy).putInt(4, damaged);
            assertThatIllegalStateException().as("header count %d", damaged)
                    .isThrownBy(() -> StoredResponseCodec.decode(copy));
        }
    }

    @Test
    void aLargeCompressibleBodyIsStoredDeflatedAndComesBackByteIdentical() {
        byte[] json = "{\"sites\":[\"https://a.example\",\"https://b.example\"],\"status\":\"PENDING\"}"
                .repeat(2000).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        StoredResponse response = new StoredResponse(202, List.of(new ResponseHeader("Content-Type", "application/json")),
                json, false);

        byte[] compressed = StoredResponseCodec.encode(response, 1024);
        byte[] plain = StoredResponseCodec.encode(response);

        assertThat(compressed.length).isLessThan(plain.length / 10);
        assertThat(StoredResponseCodec.decode(compressed)).isEqualTo(response);
    }

    @Test
    void smallOrIncompressibleBodiesAreStoredAsTheyAre() {
        byte[] random = new byte[4096];
        new java.util.Random(3).nextBytes(random);
        StoredResponse noise = new StoredResponse(200, List.of(), random, false);
        StoredResponse small = new StoredResponse(202, List.of(), "{\"processId\":\"p\"}".getBytes(), false);

        assertThat(StoredResponseCodec.encode(noise, 1024)).isEqualTo(StoredResponseCodec.encode(noise));
        assertThat(StoredResponseCodec.encode(small, 1024)).isEqualTo(StoredResponseCodec.encode(small));
        assertThat(StoredResponseCodec.decode(StoredResponseCodec.encode(noise, 1024))).isEqualTo(noise);
    }

    @Test
    void aDamagedCompressedBodyFailsWithIllegalStateException() {
        byte[] json = "{\"a\":1}".repeat(1000).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] encoded = StoredResponseCodec.encode(new StoredResponse(200, List.of(), json, false), 16);
        byte[] damaged = encoded.clone();
        for (int i = damaged.length - 20; i < damaged.length; i++) {
            damaged[i] ^= 0x5a;
        }
        assertThatIllegalStateException().isThrownBy(() -> StoredResponseCodec.decode(damaged));
    }
}
