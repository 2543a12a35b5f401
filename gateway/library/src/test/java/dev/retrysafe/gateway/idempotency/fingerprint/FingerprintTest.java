package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FingerprintTest {

    private static final String HEX = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    @Test
    void acceptsSixtyFourLowercaseHexCharacters() {
        assertThat(new Fingerprint(HEX).hex()).isEqualTo(HEX);
        assertThat(new Fingerprint(HEX).toString()).contains(HEX);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "", "abc",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85",   // 63
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8550", // 65
            "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",  // uppercase
            "g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})
    void rejectsAnythingElse(String hex) {
        assertThatIllegalArgumentException().isThrownBy(() -> new Fingerprint(hex));
    }

    @Test
    void isBuiltFromADigest() {
        byte[] digest = new byte[32];
        digest[0] = (byte) 0xAB;
        digest[31] = 0x01;
        assertThat(Fingerprint.ofDigest(digest).hex())
                .isEqualTo("ab" + "00".repeat(30) + "01");
        assertThatIllegalArgumentException().isThrownBy(() -> Fingerprint.ofDigest(new byte[31]));
    }
}
