package dev.retrysafe.gateway.idempotency.operator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SettlementTest {

    static Settlement complete(String reason, Integer status, String contentType) {
        return new Settlement("complete", reason, status, "{\"id\":1}", contentType);
    }

    static String refusedField(Settlement settlement) {
        return settlement.invalid().map(Settlement.Invalid::field).orElse(null);
    }

    @Test
    void aReconciledResultWithAReasonIsAccepted() {
        Settlement settlement = complete("ticket 42: created, see the backend's log \\ René", 202,
                "application/json; charset=utf-8");

        assertThat(settlement.invalid()).isEmpty();
        assertThat(settlement.response().status()).isEqualTo(202);
        assertThat(settlement.response().headers())
                .containsExactly(new ResponseHeader("Content-Type", "application/json; charset=utf-8"));
        assertThat(new String(settlement.response().body(), StandardCharsets.UTF_8)).isEqualTo("{\"id\":1}");
    }

    @Test
    void aReleaseNeedsNoStatusAndAnyActionCaseIsAccepted() {
        assertThat(new Settlement("Release", "nothing was created", null, null, null).invalid()).isEmpty();
        assertThat(new Settlement("COMPLETE", "created", 200, null, null).completes()).isTrue();
        assertThat(new Settlement("complete", "created", 200, null, null).response().headers()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "created\nOPERATOR admin release scope x (was UNCERTAIN): forged",
            "created\r", "tab\there", "nul\u0000", "bidi \u202e", "line\u2028separator", "lone \ud800 surrogate"})
    void aReasonMustBeOnePrintableLine(String reason) {
        assertThat(refusedField(complete(reason, 202, null))).isEqualTo("reason");
    }

    @Test
    void aReasonIsBounded() {
        assertThat(complete("x".repeat(Settlement.MAX_REASON_LENGTH), 202, null).invalid()).isEmpty();
        assertThat(refusedField(complete("x".repeat(Settlement.MAX_REASON_LENGTH + 1), 202, null)))
                .isEqualTo("reason");
    }

    @ParameterizedTest
    @ValueSource(strings = {"application/json\r\nX-Forged: 1", "text/plain; profile=\"a\r\nb\"", "text/plain\u0000",
            " application/json", "application/", "json", "*/*", "application/*", "text/plain; charset=\"\u00e9\"",
            "a/b, c/d", ""})
    void aContentTypeMustBeOneConcreteMediaTypeHttpCanCarry(String contentType) {
        assertThat(refusedField(complete("created", 202, contentType))).isEqualTo("contentType");
    }

    @ParameterizedTest
    @ValueSource(ints = {100, 101, 199, 600, 999, -1})
    void completeNeedsAFinalStatus(int status) {
        assertThat(refusedField(complete("created", status, null))).isEqualTo("status");
        assertThat(refusedField(complete("created", null, null))).isEqualTo("status");
    }

    @Test
    void anUnknownActionIsNamed() {
        assertThat(refusedField(new Settlement("delete", "why not", null, null, null))).isEqualTo("action");
    }
}
