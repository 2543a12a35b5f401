package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class Utf8Test {

    @Test
    void anOverlongFourByteFormIsRefusedNotDecodedIntoStraySurrogates() {
        // Found by CanonicalJsonPropertiesTest (a flipped byte): F0 89 98 80 was canonicalised into "\ud7e5\ude00"-like
        // text whose canonical form was then refused.
        byte[] body = bytes("7b22", "f0899880", "223a317d"); // {"<F0 89 98 80>":1}
        assertThat(Utf8.isValid(body)).isFalse();
        assertThat(new CanonicalJson(Set.of(), List.of()).canonicalize(body)).isEqualTo(Optional.empty());
    }

    @Test
    void validTextOfEveryLengthIsAccepted() {
        assertThat(Utf8.isValid("{\"a\":\"é€😀\u007f\"}".getBytes(StandardCharsets.UTF_8))).isTrue();
        assertThat(Utf8.isValid(new byte[0])).isTrue();
    }

    @Test
    void theEdgesOfRfc3629() {
        assertThat(Utf8.isValid(bytes("c0af"))).as("overlong two bytes").isFalse();
        assertThat(Utf8.isValid(bytes("e08080"))).as("overlong three bytes").isFalse();
        assertThat(Utf8.isValid(bytes("eda080"))).as("an encoded surrogate").isFalse();
        assertThat(Utf8.isValid(bytes("ed9fbf"))).as("U+D7FF").isTrue();
        assertThat(Utf8.isValid(bytes("f48fbfbf"))).as("U+10FFFF").isTrue();
        assertThat(Utf8.isValid(bytes("f4908080"))).as("beyond U+10FFFF").isFalse();
        assertThat(Utf8.isValid(bytes("e282"))).as("truncated").isFalse();
        assertThat(Utf8.isValid(bytes("80"))).as("a continuation byte first").isFalse();
        assertThat(Utf8.isValid(bytes("f5808080"))).isFalse();
    }

    @Test
    void agreesWithTheJdksStrictDecoderOnRandomBytes() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        for (int n = 0; n < 20_000; n++) {
            byte[] bytes = new byte[random.nextInt(12)];
            for (int i = 0; i < bytes.length; i++) {
                // Mostly high bytes, where the cases are.
                bytes[i] = (byte) (random.nextInt(4) == 0 ? random.nextInt(0x80) : 0x80 + random.nextInt(0x80));
            }
            assertThat(Utf8.isValid(bytes)).as("seed %d: %s", seed, HexFormat.of().formatHex(bytes))
                    .isEqualTo(jdkAccepts(bytes));
        }
    }

    private static boolean jdkAccepts(byte[] bytes) {
        try {
            StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }

    private static byte[] bytes(String... hex) {
        return HexFormat.of().parseHex(String.join("", hex));
    }
}
