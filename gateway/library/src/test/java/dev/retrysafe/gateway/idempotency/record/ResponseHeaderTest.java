package dev.retrysafe.gateway.idempotency.record;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.handler.codec.http.DefaultHttpHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ResponseHeaderTest {

    /** What the server that writes our responses accepts: the rule must never be laxer, or a replay is a 5xx. */
    private static boolean nettyAccepts(String name, String value) {
        try {
            new DefaultHttpHeaders().add(name, value);
            return true;
        } catch (IllegalArgumentException refused) {
            return false;
        }
    }

    @Test
    void everyOneByteCharacterIsJudgedInAValueAsNettyJudgesIt() {
        for (char c = 0; c <= 0xFF; c++) {
            for (String value : new String[] {c + "x", "x" + c + "y", "x" + c}) {
                assertThat(new ResponseHeader("X-Test", value).isWritable())
                        .as("value %s (char %d)", value.replace("\r", "\\r").replace("\n", "\\n"), (int) c)
                        .isEqualTo(nettyAccepts("X-Test", value));
            }
        }
    }

    @Test
    void everyOneByteCharacterIsJudgedInANameAsNettyJudgesIt() {
        for (char c = 0; c <= 0xFF; c++) {
            String name = "X-" + c;
            assertThat(new ResponseHeader(name, "v").isWritable()).as("name char %d", (int) c)
                    .isEqualTo(nettyAccepts(name, "v"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"application/json", "text/plain; charset=utf-8", "a\tb", "a b ", "caf\u00e9", ""})
    void ordinaryValuesAreWritable(String value) {
        assertThat(new ResponseHeader("Content-Type", value).isWritable()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"text/plain\r\nX-Forged: 1", "a\nb", "a\rb", "a\u0000b", " leading", "\ttab",
            "a\u007fb", "euro \u20ac"})
    void valuesHttpCannotCarryAreNot(String value) {
        assertThat(new ResponseHeader("Content-Type", value).isWritable()).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "Content Type", "Content-Type:", "X\r\nY", "Caf\u00e9", "(x)"})
    void namesThatAreNotTokensAreNotWritable(String name) {
        assertThat(new ResponseHeader(name, "v").isWritable()).isFalse();
    }
}
