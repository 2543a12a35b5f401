package dev.retrysafe.gateway.idempotency.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KeyPolicyTest {

    private static final String HEADER = KeyPolicy.DEFAULT_HEADER_NAME;
    private final KeyPolicy policy = new KeyPolicy(16, 64);

    @ParameterizedTest
    @ValueSource(strings = {
            "8f1c2d3e4a5b6c7d8e9f0a1b",             // the contract's example, 24 chars
            "3f2b8c1e-9d4a-4e7b-a6c5-0f1e2d3c4b5a", // Str::uuid()
            "0123456789abcdef0123456789abcdef",     // bin2hex(random_bytes(16))
            "Under_score-AND-dash_09"})
    void acceptsKeysInTheDocumentedFormats(String value) {
        assertThat(policy.check(HEADER, List.of(value)))
                .isEqualTo(new KeyCheck.Valid(new IdempotencyKey(value)));
    }

    @Test
    void acceptsExactlyMinAndMaxLength() {
        assertThat(policy.check(HEADER, List.of("a".repeat(16)))).isInstanceOf(KeyCheck.Valid.class);
        assertThat(policy.check(HEADER, List.of("a".repeat(64)))).isInstanceOf(KeyCheck.Valid.class);
    }

    @Test
    void rejectsAMissingHeaderAsMissing() {
        String expected = "The Idempotency-Key header is required.";
        assertThat(policy.check(HEADER, null)).isEqualTo(KeyCheck.Rejected.missing(expected));
        assertThat(policy.check(HEADER, List.of())).isEqualTo(KeyCheck.Rejected.missing(expected));
    }

    @Test
    void rejectsAHeaderSentTwiceEvenWithTheSameValue() {
        String key = "8f1c2d3e4a5b6c7d8e9f0a1b";
        assertThat(policy.check(HEADER, List.of(key, key)))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must be sent only once."));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "   \t  "})
    void rejectsAnEmptyOrBlankValue(String value) {
        assertThat(policy.check(HEADER, List.of(value)))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must not be empty."));
    }

    @Test
    void rejectsANullValueAsEmpty() {
        assertThat(policy.check(HEADER, Collections.singletonList(null)))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must not be empty."));
    }

    @Test
    void rejectsOneCharacterBelowTheMinimum() {
        assertThat(policy.check(HEADER, List.of("a".repeat(15))))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must be at least 16 characters long."));
    }

    @Test
    void rejectsOneCharacterAboveTheMaximum() {
        assertThat(policy.check(HEADER, List.of("a".repeat(65))))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must be at most 64 characters long."));
    }

    @Test
    void aQuotedKeyIsTheStringBetweenTheQuotesWhereThePolicyTakesTheDraftsForm() {
        KeyPolicy draft = new KeyPolicy(16, 64, true);
        String key = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        assertThat(draft.check(HEADER, List.of("\"" + key + "\"")))
                .isEqualTo(new KeyCheck.Valid(new IdempotencyKey(key)));
        assertThat(draft.check(HEADER, List.of(key))).as("unquoted too")
                .isEqualTo(new KeyCheck.Valid(new IdempotencyKey(key)));
        assertThat(draft.check(HEADER, List.of("\"" + "a".repeat(64) + "\""))).as("the quotes are not counted")
                .isInstanceOf(KeyCheck.Valid.class);
        assertThat(draft.check(HEADER, List.of("\"" + "a".repeat(65) + "\"")))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must be at most 64 characters long."));
        assertThat(draft.check(HEADER, List.of("\"\"")))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must not be empty."));
        assertThat(draft.check(HEADER, List.of("\"" + "a".repeat(20) + "\\\"\"")))
                .as("an escaped quote is a character the rules refuse").isInstanceOf(KeyCheck.Rejected.class);
        assertThat(draft.check(HEADER, List.of("\"" + "a".repeat(20)))).as("one quote only")
                .isInstanceOf(KeyCheck.Rejected.class);
        assertThat(policy.check(HEADER, List.of("\"" + key + "\""))).as("not on a policy without the draft's form")
                .isInstanceOf(KeyCheck.Rejected.class);
    }

    @Test
    void messagesCarryTheConfiguredLimits() {
        KeyPolicy other = new KeyPolicy(20, 30);
        assertThat(other.check(HEADER, List.of("a".repeat(19))))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must be at least 20 characters long."));
        assertThat(other.check(HEADER, List.of("a".repeat(31))))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must be at most 30 characters long."));
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "8f1c2d3e4a5b6c7d8e9f0a1b!",
            "8f1c2d3e4a5b 6c7d8e9f0a1b",
            "8f1c2d3e4a5b.6c7d8e9f0a1b",
            "8f1c2d3e4a5b/6c7d8e9f0a1b",
            "8f1c2d3e4a5b6c7d8e9f0a1ñ",   // a non-ASCII letter
            "8f1c2d3e4a5b6c7d8e9f0a1b\u0000",
            "8f1c2d3e4a5b6c7d8e9f0a1b\r\nX-Injected: 1"})
    void rejectsCharactersOutsideTheAllowedSet(String value) {
        assertThat(policy.check(HEADER, List.of(value)))
                .isEqualTo(KeyCheck.Rejected.malformed(
                        "The Idempotency-Key header may only contain letters, digits, '-' and '_'."));
    }

    @Test
    void doesNotTrimSurroundingSpaces() {
        assertThat(policy.check(HEADER, List.of(" 8f1c2d3e4a5b6c7d8e9f0a1b ")))
                .isEqualTo(KeyCheck.Rejected.malformed(
                        "The Idempotency-Key header may only contain letters, digits, '-' and '_'."));
    }

    @Test
    void appliesTheRulesInOrder() {
        // Too short and with a bad character: the length rule comes first.
        assertThat(policy.check(HEADER, List.of("a b")))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must be at least 16 characters long."));
        // Sent twice, with one empty value: "only once" comes before "not empty".
        assertThat(policy.check(HEADER, Arrays.asList("", "8f1c2d3e4a5b6c7d8e9f0a1b")))
                .isEqualTo(KeyCheck.Rejected.malformed("The Idempotency-Key header must be sent only once."));
    }

    @Test
    void namesTheConfiguredHeaderInEveryMessage() {
        String header = "X-Request-Key";
        assertThat(List.of(
                policy.check(header, null),
                policy.check(header, List.of("a".repeat(16), "b".repeat(16))),
                policy.check(header, List.of(" ")),
                policy.check(header, List.of("short")),
                policy.check(header, List.of("a".repeat(65))),
                policy.check(header, List.of("a".repeat(15) + "!")))
        ).allSatisfy(check -> assertThat(check).isInstanceOfSatisfying(KeyCheck.Rejected.class,
                rejected -> assertThat(rejected.message()).startsWith("The X-Request-Key header ")));
    }

    @Test
    void neverEchoesTheRejectedValue() {
        String value = "secret_token_value\u0007!";
        KeyCheck check = policy.check(HEADER, List.of(value));
        assertThat(check).isInstanceOfSatisfying(KeyCheck.Rejected.class,
                rejected -> assertThat(rejected.message()).doesNotContain("secret"));
    }

    @Test
    void checksHugeValuesQuickly() {
        String huge = "a".repeat(1_000_000);
        assertThat(policy.check(HEADER, List.of(huge))).isInstanceOf(KeyCheck.Rejected.class);
        assertThat(new KeyPolicy(1, Integer.MAX_VALUE).check(HEADER, List.of(huge)))
                .isInstanceOf(KeyCheck.Valid.class);
    }

    @Test
    void validatesItsLimits() {
        assertThatIllegalArgumentException().isThrownBy(() -> new KeyPolicy(0, 64));
        assertThatIllegalArgumentException().isThrownBy(() -> new KeyPolicy(16, 15));
        assertThat(new KeyPolicy(1, 1).check(HEADER, List.of("a"))).isInstanceOf(KeyCheck.Valid.class);
    }

    @Test
    void defaultsMatchTheDocumentedLimits() {
        assertThat(KeyPolicy.DEFAULT).isEqualTo(new KeyPolicy(16, 64));
        assertThat(KeyPolicy.DEFAULT_HEADER_NAME).isEqualTo("Idempotency-Key");
    }
}
