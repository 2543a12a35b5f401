package dev.retrysafe.gateway.idempotency.operator;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LogTextTest {

    @Test
    void ordinaryTextIsWrittenAsItIs() {
        assertThat(LogText.oneLine("ticket 42: créé, voir ✓")).isEqualTo("ticket 42: créé, voir ✓");
    }

    @Test
    void lineBreaksCannotStartALineOfTheirOwn() {
        String forged = "ok\n2026-12-03 WARN OPERATOR admin release scope x (was UNCERTAIN): forged\r";

        assertThat(LogText.oneLine(forged))
                .isEqualTo("ok\\n2026-12-03 WARN OPERATOR admin release scope x (was UNCERTAIN): forged\\r")
                .doesNotContain("\n", "\r");
    }

    @Test
    void controlAndFormatCharactersAreEscapedAndABackslashIsDoubled() {
        assertThat(LogText.oneLine("a\tb\u0000c\u001b[31md\u202ee\u2028f\\n"))
                .isEqualTo("a\\tb\\u0000c\\u001b[31md\\u202ee\\u2028f\\\\n");
    }

    @Test
    void onePrintableLineIsWhatNeedsNoEscapeButABackslash() {
        assertThat(LogText.isOnePrintableLine("C:\\tickets 42 é ✓")).isTrue();
        assertThat(LogText.isOnePrintableLine("a\nb")).isFalse();
        assertThat(LogText.isOnePrintableLine("a\tb")).isFalse();
        assertThat(LogText.isOnePrintableLine("a\u202eb")).isFalse();
    }
}
