package dev.retrysafe.gateway.idempotency.pointer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class JsonPointerTest {

    @Test
    void eachSegmentMatchesOneMemberByItsExactName() {
        JsonPointer pointer = JsonPointer.parse("/meta/requestId");

        assertThat(pointer.depth()).isEqualTo(2);
        assertThat(pointer.matchesAt(0, "meta")).isTrue();
        assertThat(pointer.matchesAt(0, "Meta")).isFalse();
        assertThat(pointer.matchesAt(1, "requestId")).isTrue();
        assertThat(pointer.hasWildcard()).isFalse();
    }

    @Test
    void aStarMatchesEveryMemberAndEveryIndex() {
        JsonPointer pointer = JsonPointer.parse("/items/*/sentAt");

        assertThat(pointer.hasWildcard()).isTrue();
        assertThat(pointer.matchesAt(1, "0")).isTrue();
        assertThat(pointer.matchesAt(1, "anything")).isTrue();
        assertThat(pointer.matchesAt(2, "sentAt")).isTrue();
    }

    @Test
    void escapesAreDecodedAsRfc6901Says() {
        assertThat(JsonPointer.parse("/a~1b").matchesAt(0, "a/b")).isTrue();
        assertThat(JsonPointer.parse("/m~0n").matchesAt(0, "m~n")).isTrue();
        // ~01 is "~" then "1", never "/"
        assertThat(JsonPointer.parse("/~01").matchesAt(0, "~1")).isTrue();
        assertThat(JsonPointer.parse("/~01").matchesAt(0, "/")).isFalse();
    }

    @Test
    void anIndexIsMatchedInItsDecimalSpellingOnly() {
        JsonPointer pointer = JsonPointer.parse("/2");

        assertThat(pointer.matchesAt(0, "2")).isTrue();
        assertThat(JsonPointer.parse("/02").matchesAt(0, "2")).isFalse();
        assertThat(JsonPointer.parse("/-").matchesAt(0, "2")).isFalse();
    }

    @Test
    void emptySegmentsNameMembersWithAnEmptyName() {
        JsonPointer pointer = JsonPointer.parse("/a//");

        assertThat(pointer.depth()).isEqualTo(3);
        assertThat(pointer.matchesAt(1, "")).isTrue();
    }

    @Test
    void aStarThatIsPartOfANameIsLiteral() {
        assertThat(JsonPointer.parse("/a*").matchesAt(0, "ab")).isFalse();
        assertThat(JsonPointer.parse("/a*").matchesAt(0, "a*")).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "sentAt", " /sentAt", "#/sentAt"})
    void aPointerMustStartWithASlash(String text) {
        assertThatIllegalArgumentException().isThrownBy(() -> JsonPointer.parse(text))
                .withMessage("'" + text + "' is not a JSON pointer: it must start with '/'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/a~", "/a~2", "/~x/b"})
    void aTildeMustBeAnEscape(String text) {
        assertThatIllegalArgumentException().isThrownBy(() -> JsonPointer.parse(text))
                .withMessage("'" + text + "' is not a JSON pointer: '~' must be followed by 0 (for '~') or 1 (for '/')");
    }

    @Test
    void showsItselfAsWritten() {
        assertThat(JsonPointer.parse("/a~1b/*")).hasToString("/a~1b/*").isEqualTo(JsonPointer.parse("/a~1b/*"));
    }
}
