package dev.retrysafe.gateway.idempotency.record;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class StoredResponseTest {

    private static final List<ResponseHeader> HEADERS = List.of(
            new ResponseHeader("Content-Type", "application/json"), new ResponseHeader("X-Trace", "1"));

    private static byte[] body(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void responsesWithTheSameContentAreEqualEvenWithDistinctBodyArrays() {
        StoredResponse a = new StoredResponse(202, HEADERS, body("{\"id\":1}"), false);
        StoredResponse b = new StoredResponse(202, new ArrayList<>(HEADERS), body("{\"id\":1}"), false);

        assertThat(a.body()).isNotSameAs(b.body());
        assertThat(a).isEqualTo(b);
        assertThat(a.hashCode()).isEqualTo(b.hashCode());
    }

    @Test
    void aDifferentBodyMakesThemDifferent() {
        assertThat(new StoredResponse(202, HEADERS, body("{\"id\":1}"), false))
                .isNotEqualTo(new StoredResponse(202, HEADERS, body("{\"id\":2}"), false));
    }

    @Test
    void aDifferentStatusMakesThemDifferent() {
        assertThat(new StoredResponse(200, HEADERS, body("x"), false))
                .isNotEqualTo(new StoredResponse(201, HEADERS, body("x"), false));
    }

    @Test
    void differentHeadersOrHeaderOrderMakeThemDifferent() {
        List<ResponseHeader> reversed = List.of(HEADERS.get(1), HEADERS.get(0));

        assertThat(new StoredResponse(200, HEADERS, body("x"), false))
                .isNotEqualTo(new StoredResponse(200, reversed, body("x"), false))
                .isNotEqualTo(new StoredResponse(200, HEADERS.subList(0, 1), body("x"), false));
    }

    @Test
    void theBodyOmittedFlagMakesThemDifferent() {
        assertThat(new StoredResponse(200, HEADERS, new byte[0], false))
                .isNotEqualTo(new StoredResponse(200, HEADERS, new byte[0], true));
    }

    @Test
    void isNotEqualToOtherTypesOrNull() {
        StoredResponse response = new StoredResponse(200, HEADERS, body("x"), false);

        assertThat(response.equals(null)).isFalse();
        assertThat(response.equals("StoredResponse")).isFalse();
        assertThat(response).isEqualTo(response);
    }

    @ParameterizedTest
    @ValueSource(ints = {100, 200, 202, 299, 404, 500, 599, 999})
    void acceptsHttpStatuses(int status) {
        assertThat(new StoredResponse(status, List.of(), new byte[0], false).status()).isEqualTo(status);
    }

    @ParameterizedTest
    @ValueSource(ints = {Integer.MIN_VALUE, -1, 0, 99, 1000, 65536})
    void rejectsWhatIsNotAnHttpStatus(int status) {
        assertThatIllegalArgumentException().isThrownBy(() -> new StoredResponse(status, List.of(), new byte[0], false));
    }

    @Test
    void rejectsAMissingBodyOrHeaders() {
        assertThatNullPointerException().isThrownBy(() -> new StoredResponse(200, List.of(), null, false));
        assertThatNullPointerException().isThrownBy(() -> new StoredResponse(200, null, new byte[0], false));
    }

    @Test
    void theHeaderListIsCopiedAndUnmodifiable() {
        List<ResponseHeader> source = new ArrayList<>(HEADERS);
        StoredResponse response = new StoredResponse(200, source, new byte[0], false);

        source.add(new ResponseHeader("Late", "1"));

        assertThat(response.headers()).containsExactlyElementsOf(HEADERS).isUnmodifiable();
    }

    @ParameterizedTest
    @ValueSource(ints = {200, 201, 202, 204, 299})
    void twoHundredsAreSuccessful(int status) {
        assertThat(new StoredResponse(status, List.of(), new byte[0], false).isSuccessful()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(ints = {100, 199, 300, 303, 400, 409, 500})
    void everythingElseIsNotSuccessful(int status) {
        assertThat(new StoredResponse(status, List.of(), new byte[0], false).isSuccessful()).isFalse();
    }

    @Test
    void toStringSummarisesWithoutDumpingTheBodyOrHeaderValues() {
        StoredResponse response = new StoredResponse(202,
                List.of(new ResponseHeader("Authorization-Echo", "secret-header-value")),
                body("{\"iban\":\"DE89370400440532013000\"}"), false);

        String text = response.toString();

        assertThat(text).contains("202").contains("bodyBytes=33")
                .doesNotContain("DE89370400440532013000")
                .doesNotContain("iban")
                .doesNotContain("secret-header-value")
                .doesNotContain("[B@");
    }

    @Test
    void toStringMentionsAnOmittedBody() {
        assertThat(new StoredResponse(200, List.of(), new byte[0], true).toString()).contains("bodyOmitted");
        assertThat(new StoredResponse(200, List.of(), new byte[0], false).toString()).doesNotContain("bodyOmitted");
    }
}
