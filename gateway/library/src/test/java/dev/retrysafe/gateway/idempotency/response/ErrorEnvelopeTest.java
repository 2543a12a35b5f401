package dev.retrysafe.gateway.idempotency.response;

import dev.retrysafe.gateway.idempotency.response.ErrorEnvelope;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class ErrorEnvelopeTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final OffsetDateTime AT = OffsetDateTime.parse("2026-08-17T10:14:03.789-05:00");

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Test
    void rendersTheOnboardingErrorBodyExactly() {
        byte[] json = ErrorEnvelope.json(409, "The idempotency key was already used with a different payload.", AT);

        assertThat(text(json)).isEqualTo("{\"status\":{\"status\":\"FAILED\",\"reason\":409,"
                + "\"message\":\"The idempotency key was already used with a different payload.\","
                + "\"date\":\"2026-08-17T10:14:03-05:00\"}}");
    }

    @Test
    void theDateHasWholeSecondsEvenWhenTheTimeIsZeroSeconds() {
        OffsetDateTime onTheMinute = OffsetDateTime.parse("2026-01-02T03:04:00.999999999+02:00");

        assertThat(text(ErrorEnvelope.json(400, "x", onTheMinute))).contains("\"date\":\"2026-01-02T03:04:00+02:00\"");
    }

    @Test
    void utcIsRenderedAsANumericOffsetNotZ() {
        OffsetDateTime utc = OffsetDateTime.of(2026, 8, 17, 15, 14, 3, 0, ZoneOffset.UTC);

        String body = text(ErrorEnvelope.json(503, "Unavailable", utc));

        assertThat(body).contains("\"date\":\"2026-08-17T15:14:03+00:00\"").doesNotContain("03Z");
    }

    @Test
    void theReasonIsTheStatusAsANumber() throws Exception {
        JsonNode status = JSON.readTree(ErrorEnvelope.json(422, "Unprocessable", AT)).get("status");

        assertThat(status.get("reason").isNumber()).isTrue();
        assertThat(status.get("reason").asInt()).isEqualTo(422);
        assertThat(status.get("status").asString()).isEqualTo("FAILED");
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "He said \"no\"",
            "C:\\path\\to\\thing \\u0041",
            "line one\nline two\r\n\ttabbed",
            "bell\u0007 nul\u0000 esc\u001b unit-sep\u001f del\u007f",
            "ends with a backslash \\",
            "\"",
            "",
            "unicode ümlaut 東京 🍞 \u2028 \u2029",
            "</script><script>alert(1)</script>"})
    void anyMessageIsEscapedSoTheBodyParsesAndCarriesItUnchanged(String message) throws Exception {
        byte[] json = ErrorEnvelope.json(400, message, AT);

        JsonNode root = JSON.readTree(json);

        assertThat(root.get("status").get("message").asString()).isEqualTo(message);
        assertThat(root.get("status").get("reason").asInt()).isEqualTo(400);
        assertThat(root.get("status").get("date").asString()).isEqualTo("2026-08-17T10:14:03-05:00");
    }

    @Test
    void controlCharactersAreEscapedNotWrittenRaw() {
        String body = text(ErrorEnvelope.json(400, "a\u0001b\nc\td\re\u001fz", AT));

        assertThat(body).contains("a\\u0001b\\nc\\td\\re\\u001fz");
        assertThat(body.chars().filter(c -> c < 0x20)).isEmpty();
    }

    @Test
    void quotesAndBackslashesAreEscaped() {
        assertThat(text(ErrorEnvelope.json(400, "say \"hi\" \\ bye", AT)))
                .contains("\"message\":\"say \\\"hi\\\" \\\\ bye\"");
    }

    @Test
    void nonAsciiTextIsWrittenAsUtf8() {
        byte[] json = ErrorEnvelope.json(400, "Müller", AT);

        assertThat(text(json)).contains("\"message\":\"Müller\"");
        assertThat(json).contains("Müller".getBytes(StandardCharsets.UTF_8));
    }
}
