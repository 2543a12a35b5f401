package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.store.StoredResponseUnreadable;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
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

    static final EncryptionKeys K1 = EncryptionKeys.fromBase64(Map.of("k1", key(1)), "k1");
    static final EncryptionKeys K1_K2_ACTIVE_K2 = EncryptionKeys.fromBase64(Map.of("k1", key(1), "k2", key(2)), "k2");
    static final EncryptionKeys K2_ONLY = EncryptionKeys.fromBase64(Map.of("k2", key(2)), "k2");
    static final String SCOPE = "c2NvcGUtaGFzaA";

    static String key(int seed) {
        byte[] key = new byte[32];
        Arrays.fill(key, (byte) seed);
        return java.util.Base64.getEncoder().encodeToString(key);
    }

    @Test
    void withEncryptionTheStoredFormHoldsNoPlaintextAndReadsBackForItsRecord() {
        StoredResponseCodec sealing = new StoredResponseCodec(1024, K1);

        byte[] stored = sealing.encode(TYPICAL, SCOPE);

        assertThat(stored[0]).isEqualTo((byte) 2);
        String raw = new String(stored, StandardCharsets.ISO_8859_1);
        assertThat(raw).doesNotContain("merchantId").doesNotContain("m-1").doesNotContain("application/json")
                .doesNotContain("rel=next");
        assertThat(sealing.decode(stored, SCOPE)).isEqualTo(TYPICAL);
    }

    @Test
    void compressionHappensBeforeEncryption() {
        byte[] json = "{\"status\":\"PENDING\"}".repeat(2000).getBytes(StandardCharsets.UTF_8);
        StoredResponse large = new StoredResponse(202, List.of(), json, false);

        byte[] stored = new StoredResponseCodec(1024, K1).encode(large, SCOPE);

        assertThat(stored.length).isLessThan(json.length / 10);
        assertThat(new StoredResponseCodec(1024, K1).decode(stored, SCOPE)).isEqualTo(large);
    }

    @Test
    void withoutEncryptionTheFormatIsTheUnencryptedOne() {
        StoredResponseCodec plain = new StoredResponseCodec(1024, EncryptionKeys.none());

        assertThat(plain.encode(TYPICAL, SCOPE)).isEqualTo(StoredResponseCodec.encode(TYPICAL, 1024));
        assertThat(plain.decode(StoredResponseCodec.encode(TYPICAL), SCOPE)).isEqualTo(TYPICAL);
    }

    @Test
    void recordsWrittenBeforeEncryptionWasTurnedOnStayReadable() {
        byte[] beforeEncryption = new StoredResponseCodec(1024, EncryptionKeys.none()).encode(TYPICAL, SCOPE);

        assertThat(new StoredResponseCodec(1024, K1).decode(beforeEncryption, SCOPE)).isEqualTo(TYPICAL);
    }

    @Test
    void afterRotationRecordsUnderTheOldKeyStayReadable() {
        byte[] underK1 = new StoredResponseCodec(1024, K1).encode(TYPICAL, SCOPE);
        StoredResponseCodec rotated = new StoredResponseCodec(1024, K1_K2_ACTIVE_K2);

        assertThat(rotated.decode(underK1, SCOPE)).isEqualTo(TYPICAL);
        byte[] underK2 = rotated.encode(TYPICAL, SCOPE);
        assertThat(new String(underK2, StandardCharsets.US_ASCII)).contains("k2");
        assertThat(new StoredResponseCodec(1024, K2_ONLY).decode(underK2, SCOPE)).isEqualTo(TYPICAL);
    }

    @Test
    void aRecordUnderARemovedKeyIsUnreadableButKeepsItsStatus() {
        byte[] underK1 = new StoredResponseCodec(1024, K1).encode(TYPICAL, SCOPE);

        assertThatThrownBy(() -> new StoredResponseCodec(1024, K2_ONLY).decode(underK1, SCOPE))
                .isInstanceOfSatisfying(StoredResponseUnreadable.class, e -> {
                    assertThat(e.originalStatus()).isEqualTo(202);
                    assertThat(e.getMessage()).contains("'k1'");
                });
        assertThatThrownBy(() -> new StoredResponseCodec(1024, EncryptionKeys.none()).decode(underK1, SCOPE))
                .isInstanceOf(StoredResponseUnreadable.class);
    }

    @Test
    void aSealedResponseCopiedToAnotherRecordIsUnreadableThere() {
        StoredResponseCodec codec = new StoredResponseCodec(1024, K1);
        byte[] ofRecordA = codec.encode(TYPICAL, SCOPE);

        assertThatThrownBy(() -> codec.decode(ofRecordA, "another-scope-hash"))
                .isInstanceOf(StoredResponseUnreadable.class);
    }

    @Test
    void theReadableStatusOfASealedResponseCannotBeAltered() {
        StoredResponseCodec codec = new StoredResponseCodec(1024, K1);
        byte[] stored = codec.encode(TYPICAL, SCOPE);
        java.nio.ByteBuffer.wrap(stored).putShort(1, (short) 200);

        assertThatThrownBy(() -> codec.decode(stored, SCOPE)).isInstanceOf(StoredResponseUnreadable.class);
    }

    @Test
    void aTruncatedSealedBlobIsCorruptNotMisread() {
        byte[] stored = new StoredResponseCodec(1024, K1).encode(TYPICAL, SCOPE);

        for (int length = 1; length < 8; length++) {
            byte[] truncated = Arrays.copyOf(stored, length);
            assertThatIllegalStateException().as("truncated to %d bytes", length)
                    .isThrownBy(() -> new StoredResponseCodec(1024, K1).decode(truncated, SCOPE));
        }
    }
}
