package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A record's lookup values are parts of a request body: sealed like stored responses when encryption is on. */
class LookupValuesCodecTest {
    static final Map<String, String> VALUES = Map.of("key", "k-1", "body:/taxId", "ACME1234ü/..?#", "body:/n", "");

    @Test
    void plainValuesComeBackAsTheyWere() {
        LookupValuesCodec codec = new LookupValuesCodec(EncryptionKeys.none());
        assertThat(codec.decode(codec.encode(VALUES, "scope"), "scope")).contains(VALUES);
    }

    @Test
    void withEncryptionOnTheStoredFormHidesTheValuesAndOpensOnlyForItsRecord() {
        LookupValuesCodec codec = new LookupValuesCodec(StoredResponseCodecTest.K1);
        byte[] stored = codec.encode(VALUES, "scope");

        assertThat(new String(stored, StandardCharsets.ISO_8859_1)).doesNotContain("ACME1234").doesNotContain("k-1");
        assertThat(codec.decode(stored, "scope")).contains(VALUES);
        assertThat(codec.decode(stored, "another scope")).as("copied to another record").isEmpty();
        assertThat(new LookupValuesCodec(StoredResponseCodecTest.K2_ONLY).decode(stored, "scope"))
                .as("its key removed").isEmpty();
    }

    @Test
    void damagedValuesAreNotRead() {
        LookupValuesCodec codec = new LookupValuesCodec(EncryptionKeys.none());
        byte[] stored = codec.encode(VALUES, "scope");
        byte[] cut = java.util.Arrays.copyOf(stored, stored.length - 3);
        assertThat(codec.decode(cut, "scope")).isEmpty();
        assertThat(codec.decode(new byte[] {9, 1, 2}, "scope")).isEmpty();
    }
}
