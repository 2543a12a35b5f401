package dev.retrysafe.gateway.idempotency.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class KeySourceTest {

    private static final KeySource.BodyField EVENT_ID = (KeySource.BodyField) KeySource.parse("body:/id");

    private static KeyCheck keyIn(KeySource.BodyField source, String body) {
        return source.keyIn(body.getBytes(StandardCharsets.UTF_8));
    }

    private static IdempotencyKey key(KeyCheck check) {
        assertThat(check).isInstanceOf(KeyCheck.Valid.class);
        return ((KeyCheck.Valid) check).key();
    }

    @Test
    void parsesAHeaderOrABodyPointer() {
        assertThat(KeySource.parse("header:X-GitHub-Delivery")).isEqualTo(new KeySource.Header("X-GitHub-Delivery"));
        assertThat(KeySource.parse(" Header: Idempotency-Key ")).isEqualTo(new KeySource.Header("Idempotency-Key"));
        assertThat(KeySource.parse("body:/data/object/id")).isInstanceOf(KeySource.BodyField.class)
                .hasToString("BodyField[pointer=/data/object/id]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "Idempotency-Key", "header:", "header:  ", "query:id", "/id"})
    void refusesAnythingElse(String spec) {
        assertThatIllegalArgumentException().isThrownBy(() -> KeySource.parse(spec))
                .withMessage("key-from must be header:NAME or body:/json/pointer, was '" + spec + "'");
    }

    @Test
    void refusesABodyPointerThatIsNoneOrNamesMany() {
        assertThatIllegalArgumentException().isThrownBy(() -> KeySource.parse("body:id"))
                .withMessage("key-from 'id' is not a JSON pointer: it must start with '/'");
        assertThatIllegalArgumentException().isThrownBy(() -> KeySource.parse("body:/events/*/id"))
                .withMessage("key-from must name one field of the body, '*' matches many: /events/*/id");
    }

    @Test
    void theSameEventIdIsTheSameKeyHoweverTheBodyIsSpelled() {
        IdempotencyKey first = key(keyIn(EVENT_ID, "{\"id\":\"evt_1NG8Du2eZvKYlo2C\",\"attempt\":1}"));

        assertThat(key(keyIn(EVENT_ID, "{ \"attempt\" : 2, \"id\" : \"evt_1NG8Du2eZvKYlo2C\" }"))).isEqualTo(first);
        assertThat(key(keyIn(EVENT_ID, "{\"id\":\"evt_other\"}"))).isNotEqualTo(first);
    }

    @Test
    void aDerivedKeyIsAHashOfBoundedSizeWhateverTheIdsSize() {
        IdempotencyKey small = key(keyIn(EVENT_ID, "{\"id\":\"a\"}"));
        IdempotencyKey large = key(keyIn(EVENT_ID, "{\"id\":\"" + "x".repeat(10_000) + "\"}"));

        assertThat(small.value()).hasSize(43).matches("[A-Za-z0-9_-]+");
        assertThat(large.value()).hasSize(43).matches("[A-Za-z0-9_-]+");
    }

    @Test
    void aNumberIsAKeyAndNotTheSameAsItsDigitsAsAString() {
        IdempotencyKey number = key(keyIn(EVENT_ID, "{\"id\":12345678901234567890123}"));

        assertThat(key(keyIn(EVENT_ID, "{\"id\":12345678901234567890123}"))).isEqualTo(number);
        assertThat(key(keyIn(EVENT_ID, "{\"id\":\"12345678901234567890123\"}"))).isNotEqualTo(number);
    }

    @Test
    void aNestedPointerWithEscapesAndIndexesReachesItsValue() {
        KeySource.BodyField nested = (KeySource.BodyField) KeySource.parse("body:/data/0/a~1b");

        assertThat(key(keyIn(nested, "{\"data\":[{\"a/b\":\"x\"}]}"))).isEqualTo(key(keyIn(EVENT_ID, "{\"id\":\"x\"}")));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "{\"type\":\"ping\"}            | it is missing.                                   | MISSING",
            "{\"id\":null}                  | it is null.                                      | MISSING",
            "{\"id\":\"\"}                  | it is empty.                                     | MALFORMED",
            "{\"id\":{\"v\":1}}             | it must be a string or a number, was an object.  | MALFORMED",
            "{\"id\":[1]}                   | it must be a string or a number, was an array.   | MALFORMED",
            "{\"id\":true}                  | it must be a string or a number, was a boolean.  | MALFORMED",
            "[\"id\"]                       | it is missing.                                   | MISSING",
            "\"id\"                         | it is missing.                                   | MISSING",
            "id=evt_1                       | the body is not valid JSON.                      | MALFORMED",
            "{\"id\":\"a\"} trailing        | the body is not valid JSON.                      | MALFORMED",
            "{\"id\":\"a\",\"id\":\"b\"}    | the body is not valid JSON.                      | MALFORMED"})
    void anEventWithoutAUsableValueIsRejectedNamingWhereTheKeyWasLookedFor(String body, String what,
            KeyCheck.Fault fault) {
        assertThat(keyIn(EVENT_ID, body)).isEqualTo(new KeyCheck.Rejected(fault,
                "The idempotency key is taken from the request body at /id; " + what));
    }

    @Test
    void anEmptyBodyIsNotJson() {
        assertThat(keyIn(EVENT_ID, "")).isEqualTo(KeyCheck.Rejected.malformed(
                "The idempotency key is taken from the request body at /id; the body is not valid JSON."));
    }

    @Test
    void headerNamesCompareWithoutCase() {
        assertThat(new KeySource.Header("X-GitHub-Delivery").sameHeader(" x-github-delivery")).isTrue();
        assertThat(new KeySource.Header("X-GitHub-Delivery").sameHeader("Idempotency-Key")).isFalse();
    }
}
