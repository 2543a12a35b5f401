package dev.retrysafe.gateway.idempotency.encryption;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EncryptionKeysTest {
    static final String K1 = base64Key(1);
    static final String K2 = base64Key(2);
    static final byte[] PLAIN = "{\"processId\":\"p-1\",\"iban\":\"DE89370400440532013000\"}"
            .getBytes(StandardCharsets.UTF_8);
    static final byte[] RECORD_A = "scope-a".getBytes(StandardCharsets.UTF_8);
    static final byte[] RECORD_B = "scope-b".getBytes(StandardCharsets.UTF_8);

    static String base64Key(int seed) {
        byte[] key = new byte[32];
        java.util.Arrays.fill(key, (byte) seed);
        return Base64.getEncoder().encodeToString(key);
    }

    final EncryptionKeys keys = EncryptionKeys.fromBase64(Map.of("k1", K1), "k1");

    @Test
    void sealsUnderTheActiveKeyAndOpensWithTheSameAssociatedData() {
        EncryptionKeys.Sealed sealed = keys.seal(PLAIN, RECORD_A);

        assertThat(sealed.keyId()).isEqualTo("k1");
        assertThat(sealed.nonce()).hasSize(12);
        assertThat(sealed.ciphertext()).hasSize(PLAIN.length + 16);
        assertThat(new String(sealed.ciphertext(), StandardCharsets.ISO_8859_1)).doesNotContain("DE8937");
        assertThat(keys.open(sealed, RECORD_A)).isEqualTo(PLAIN);
    }

    @Test
    void everySealHasItsOwnRandomNonce() {
        EncryptionKeys.Sealed first = keys.seal(PLAIN, RECORD_A);
        EncryptionKeys.Sealed second = keys.seal(PLAIN, RECORD_A);

        assertThat(first.nonce()).isNotEqualTo(second.nonce());
        assertThat(first.ciphertext()).isNotEqualTo(second.ciphertext());
    }

    @Test
    void aCiphertextMovedToAnotherRecordDoesNotOpen() {
        EncryptionKeys.Sealed sealed = keys.seal(PLAIN, RECORD_A);

        assertThatThrownBy(() -> keys.open(sealed, RECORD_B)).isInstanceOf(EncryptionKeys.CannotOpen.class)
                .hasMessageContaining("another record");
    }

    @Test
    void aTamperedCiphertextDoesNotOpen() {
        EncryptionKeys.Sealed sealed = keys.seal(PLAIN, RECORD_A);
        byte[] tampered = sealed.ciphertext().clone();
        tampered[3] ^= 1;

        assertThatThrownBy(() -> keys.open(new EncryptionKeys.Sealed("k1", sealed.nonce(), tampered), RECORD_A))
                .isInstanceOf(EncryptionKeys.CannotOpen.class);
    }

    @Test
    void relabellingACiphertextWithAnotherKeyIdDoesNotOpenIt() {
        EncryptionKeys both = EncryptionKeys.fromBase64(Map.of("k1", K1, "k2", K1), "k1");
        EncryptionKeys.Sealed sealed = both.seal(PLAIN, RECORD_A);

        // Same key bytes under another id: only the authenticated key id differs.
        assertThatThrownBy(() -> both.open(new EncryptionKeys.Sealed("k2", sealed.nonce(), sealed.ciphertext()),
                RECORD_A)).isInstanceOf(EncryptionKeys.CannotOpen.class);
    }

    @Test
    void afterRotationOldDataStillOpensAndNewDataUsesTheNewKey() {
        EncryptionKeys.Sealed old = keys.seal(PLAIN, RECORD_A);
        EncryptionKeys rotated = EncryptionKeys.fromBase64(Map.of("k1", K1, "k2", K2), "k2");

        assertThat(rotated.open(old, RECORD_A)).isEqualTo(PLAIN);
        EncryptionKeys.Sealed fresh = rotated.seal(PLAIN, RECORD_A);
        assertThat(fresh.keyId()).isEqualTo("k2");
        assertThat(rotated.open(fresh, RECORD_A)).isEqualTo(PLAIN);
    }

    @Test
    void dataUnderARemovedKeyCannotBeOpenedAndTheMessageNamesTheKey() {
        EncryptionKeys.Sealed old = keys.seal(PLAIN, RECORD_A);
        EncryptionKeys withoutK1 = EncryptionKeys.fromBase64(Map.of("k2", K2), "k2");

        assertThatThrownBy(() -> withoutK1.open(old, RECORD_A)).isInstanceOf(EncryptionKeys.CannotOpen.class)
                .hasMessageContaining("'k1' is not configured");
        assertThatThrownBy(() -> EncryptionKeys.none().open(old, RECORD_A))
                .isInstanceOf(EncryptionKeys.CannotOpen.class);
    }

    @Test
    void urlSafeBase64IsAccepted() {
        byte[] key = new byte[32];
        java.util.Arrays.fill(key, (byte) 0xfb); // encodes with '-' and '_' in the URL-safe alphabet
        String urlSafe = Base64.getUrlEncoder().encodeToString(key);
        assertThat(urlSafe).containsAnyOf("-", "_");

        EncryptionKeys parsed = EncryptionKeys.fromBase64(Map.of("k", urlSafe), "k");
        assertThat(parsed.open(parsed.seal(PLAIN, RECORD_A), RECORD_A)).isEqualTo(PLAIN);
    }

    @Test
    void aKeyOfTheWrongLengthIsRejectedWithoutShowingIt() {
        String shortKey = Base64.getEncoder().encodeToString(new byte[16]);

        assertThatIllegalArgumentException().isThrownBy(() -> EncryptionKeys.fromBase64(Map.of("k1", shortKey), "k1"))
                .withMessageContaining("'k1'").withMessageContaining("256-bit").withMessageContaining("16 bytes")
                .withMessageNotContaining(shortKey);
    }

    @Test
    void badBase64IsRejected() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> EncryptionKeys.fromBase64(Map.of("k1", "not base64!!"), "k1"))
                .withMessageContaining("'k1' is not valid base64").withMessageNotContaining("not base64!!");
    }

    @Test
    void anActiveKeyThatIsNotConfiguredIsRejected() {
        assertThatIllegalArgumentException().isThrownBy(() -> EncryptionKeys.fromBase64(Map.of("k1", K1), "k9"))
                .withMessageContaining("'k9' is not one of the configured keys [k1]");
        assertThatIllegalArgumentException().isThrownBy(() -> EncryptionKeys.fromBase64(Map.of(), "k1"))
                .withMessageContaining("no keys are configured");
    }

    @Test
    void keysWithoutAnActiveKeyAreRejected() {
        assertThatIllegalArgumentException().isThrownBy(() -> EncryptionKeys.fromBase64(Map.of("k1", K1), null))
                .withMessageContaining("no active key");
    }

    @Test
    void keyIdsAreShortAndPlain() {
        assertThatIllegalArgumentException().isThrownBy(() -> EncryptionKeys.fromBase64(Map.of("a b", K1), "a b"))
                .withMessageContaining("key id 'a b'");
    }

    @Test
    void itsDescriptionNamesTheKeysButNeverShowsThem() {
        EncryptionKeys rotated = EncryptionKeys.fromBase64(Map.of("k1", K1, "k2", K2), "k2");

        assertThat(rotated.toString()).isEqualTo("AES-256-GCM, active key 'k2', keys [k1, k2]")
                .doesNotContain(K1).doesNotContain(K2);
        assertThat(EncryptionKeys.none()).hasToString("none");
    }
}
