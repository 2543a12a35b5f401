package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.math.BigDecimal;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CanonicalJsonTest {

    private final CanonicalJson canonicalJson =
            new CanonicalJson(Set.of("integrations", "paymentMethods", "sites"), List.of());

    private Optional<String> canonical(String json) {
        return canonicalJson.canonicalize(json.getBytes(StandardCharsets.UTF_8))
                .map(bytes -> new String(bytes, StandardCharsets.UTF_8));
    }

    @Test
    void sortsObjectKeysAndDropsWhitespace() {
        assertThat(canonical(" { \"b\" : 1 ,\n\t\"a\" : { \"d\" : [ 2 , 1 ] , \"c\" : null } } "))
                .contains("{\"a\":{\"c\":null,\"d\":[2,1]},\"b\":1}");
    }

    @Test
    void keepsScalarsDistinctByType() {
        assertThat(canonical("[1,\"1\",true,\"true\",false,null,\"null\"]"))
                .contains("[1,\"1\",true,\"true\",false,null,\"null\"]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"1", "1.0", "1e0", "10E-1", "1.000", "0.1e1", "1E+0"})
    void normalisesNumbersByValue(String one) {
        assertThat(canonical(one)).contains("1");
    }

    @Test
    void normalisesOtherNumbers() {
        assertThat(canonical("[100, 1e2, 100.00, 0.5, 5e-1, -2.50, 123456789012345678901234567890]"))
                .contains("[1E+2,1E+2,1E+2,0.5,0.5,-2.5,1.2345678901234567890123456789E+29]");
        assertThat(canonical("1")).isNotEqualTo(canonical("2"));
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "0", "-0", "7", "-7", "10", "-120", "1.5", "-0.05", "100.0100", "1e3", "1.20E-3", "-4.5e+2",
            "123456789012345678901234567890", "0.000000000000000000000000000001", "12345678901234567890e-40",
            "1E-7", "25e-8", "0.0000001", "9007199254740993", "1e2147483647", "1e-2147483647"})
    void printsNumbersExactlyAsStrippedBigDecimals(String number) {
        String expected = new BigDecimal(number).stripTrailingZeros().toString();
        assertThat(CanonicalJson.number(number)).isEqualTo(expected);
        assertThat(canonical(number)).contains(expected);
    }

    @Test
    void stripsThousandsOfTrailingZeros() {
        String tenToThe998 = "1" + "0".repeat(998);
        assertThat(canonical(tenToThe998)).contains("1E+998");
        assertThat(canonical("1" + "0".repeat(500) + ".000e-500")).contains("1");
        assertThat(canonical("-0.000" + "0".repeat(900))).contains("0");
    }

    /** Amounts a double cannot tell apart are different amounts: compared by exact decimal value, never as doubles. */
    @Test
    void keepsNumbersApartThatADoubleWouldConfuse() {
        assertThat(canonical("0.1")).isNotEqualTo(canonical("0.10000000000000001"));
        assertThat(canonical("9007199254740993")).isNotEqualTo(canonical("9007199254740992"));
        assertThat(canonical("1e400")).isNotEqualTo(canonical("1e401"));
        assertThat(canonical("1e-400")).isNotEqualTo(canonical("0"));
        assertThat(canonical("[0.1, 0.10]")).contains("[0.1,0.1]");
    }

    @Test
    void treatsALoneSurrogateInANameAsNotCanonicalisable() {
        // Jackson refuses it in a name (values are fine): the body is then compared byte for byte.
        assertThat(canonical("{\"\\ud83d\":1}")).isEmpty();
        assertThat(canonical("{\"\\ud83d\\ude00\":1}")).contains("{\"\uD83D\uDE00\":1}");
    }

    @Test
    void treatsNegativeZeroAsZero() {
        assertThat(canonical("[-0, -0.0, 0e5, 0.000]")).contains("[0,0,0,0]");
    }

    @Test
    void keepsHugeExponentsShort() {
        assertThat(canonical("1e100000")).contains("1E+100000");
        assertThat(canonical("10e99999")).contains("1E+100000");
    }

    @Test
    void treatsExponentsBeyondBigDecimalAsNotCanonicalisable() {
        assertThat(canonical("1e9999999999")).isEmpty();
    }

    @Test
    void escapesStringsOneWay() {
        // The same characters written with and without escapes.
        String escaped = "\"\\u0041\\/\\u00e9\\ud83d\\ude00\\t\\u0001\\\"\\\\\"";
        String literal = "\"A/\u00e9\uD83D\uDE00\\t\\u0001\\\"\\\\\"";
        assertThat(canonical(escaped)).isEqualTo(canonical(literal))
                .contains("\"A/\u00e9\uD83D\uDE00\\t\\u0001\\\"\\\\\"");
    }

    @Test
    void keepsLoneSurrogatesDistinct() {
        assertThat(canonical("\"\\ud800\"")).contains("\"\\ud800\"");
        assertThat(canonical("\"\\ud800\"")).isNotEqualTo(canonical("\"\\ud801\""));
    }

    @Test
    void escapesObjectKeysToo() {
        assertThat(canonical("{\"a\\u0000b\":1,\"\\\"\":2}")).contains("{\"\\\"\":2,\"a\\u0000b\":1}");
    }

    @Test
    void sortsOnlyTheNamedArrays() {
        assertThat(canonical("{\"sites\":[\"b\",\"a\"],\"contacts\":[\"b\",\"a\"]}"))
                .contains("{\"contacts\":[\"b\",\"a\"],\"sites\":[\"a\",\"b\"]}");
    }

    @Test
    void sortsNamedArraysAtAnyDepthByTheirElementsCanonicalForm() {
        String one = "{\"merchant\":{\"paymentMethods\":["
                + "{\"type\":\"CARD\",\"brand\":\"VISA\"},{\"brand\":\"AMEX\",\"type\":\"CARD\"},{\"type\":\"PSE\"}]}}";
        String other = "{\"merchant\":{\"paymentMethods\":["
                + "{\"type\":\"PSE\"},{\"type\":\"CARD\",\"brand\":\"AMEX\"},{\"brand\":\"VISA\",\"type\":\"CARD\"}]}}";
        assertThat(canonical(one)).isEqualTo(canonical(other)).contains("{\"merchant\":{\"paymentMethods\":["
                + "{\"brand\":\"AMEX\",\"type\":\"CARD\"},{\"brand\":\"VISA\",\"type\":\"CARD\"},{\"type\":\"PSE\"}]}}");
    }

    @Test
    void sortsNestedNamedArraysInsideSortedOnes() {
        assertThat(canonical("{\"sites\":[{\"sites\":[3,1,2]},{\"sites\":[2,1]}]}"))
                .contains("{\"sites\":[{\"sites\":[1,2,3]},{\"sites\":[1,2]}]}");
    }

    @Test
    void ordersElementsWithLongCommonPrefixesExactlyByTheirText() {
        String x = "x".repeat(80);
        // Texts share far more than a short prefix; '"' < '1' < '2' and ',' < ']' decide.
        String elements = "\"" + x + "2\",\"" + x + "\",\"" + x + "1\","
                + "{\"k\":\"" + x + "\",\"z\":2},{\"k\":\"" + x + "\",\"z\":1},"
                + "[\"" + x + "\"],[\"" + x + "\",1]";
        assertThat(canonical("{\"sites\":[" + elements + "]}")).contains("{\"sites\":["
                + "\"" + x + "\",\"" + x + "1\",\"" + x + "2\","
                + "[\"" + x + "\",1],[\"" + x + "\"],"
                + "{\"k\":\"" + x + "\",\"z\":1},{\"k\":\"" + x + "\",\"z\":2}]}");
    }

    @Test
    void sortsLikeComparingTheWholeCanonicalTexts() {
        // Elements whose raw text sorts differently from their canonical text.
        assertThat(canonical("{\"sites\":[{\"b\":1,\"a\":2},{\"a\":1.0,\"b\":9},{\"a\":10E-1,\"b\":3}]}"))
                .contains("{\"sites\":[{\"a\":1,\"b\":3},{\"a\":1,\"b\":9},{\"a\":2,\"b\":1}]}");
    }

    @Test
    void sortsDeeplyNestedNamedArraysWithoutBlowingUp() {
        String payload = "\"" + "y".repeat(200_000) + "\"";
        String deep = "{\"sites\":[1,".repeat(240) + payload + "]}".repeat(240);
        // '1' sorts before '{' at every level, but after the payload's '"' at the innermost one.
        String expected = "{\"sites\":[1,".repeat(239) + "{\"sites\":[" + payload + ",1]}" + "]}".repeat(239);
        assertThat(canonical(deep)).contains(expected);
    }

    @Test
    void keepsTheOrderOfArraysNestedDirectlyInANamedArray() {
        // Only the array under the name is a set; an array inside it has no name of its own.
        assertThat(canonical("{\"sites\":[[2,1],[1,0]]}")).contains("{\"sites\":[[1,0],[2,1]]}");
    }

    @Test
    void keepsAnArrayOrderedWhenItsNameIsOnlyAValue() {
        assertThat(canonical("[\"sites\",[2,1]]")).contains("[\"sites\",[2,1]]");
    }

    @Test
    void sortsNothingWithoutConfiguredNames() {
        assertThat(new CanonicalJson(Set.of(), List.of())
                .canonicalize("{\"sites\":[2,1]}".getBytes(StandardCharsets.UTF_8)))
                .hasValueSatisfying(bytes -> assertThat(new String(bytes, StandardCharsets.UTF_8))
                        .isEqualTo("{\"sites\":[2,1]}"));
    }

    @Test
    void acceptsScalarsAndEmptyContainersAtTheTop() {
        assertThat(canonical("\"x\"")).contains("\"x\"");
        assertThat(canonical(" null ")).contains("null");
        assertThat(canonical("{}")).contains("{}");
        assertThat(canonical("[]")).contains("[]");
        assertThat(canonical("{\"sites\":[]}")).contains("{\"sites\":[]}");
    }

    @Test
    void rejectsDuplicateKeys() {
        assertThat(canonical("{\"a\":1,\"a\":2}")).isEmpty();
        assertThat(canonical("{\"x\":{\"a\":1,\"a\":1}}")).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "", "   ", "{", "{\"a\":1", "[1,2", "{\"a\":1}}", "{\"a\":1} x", "{} {}", "1 2", "[1,]",
            "{'a':1}", "{a:1}", "NaN", "01", "// comment\n{}", "{\"a\":1,}", "tru", "\"unterminated"})
    void rejectsAnythingButExactlyOneValidValue(String notJson) {
        assertThat(canonical(notJson)).isEmpty();
    }

    @Test
    void rejectsInvalidUtf8() {
        byte[] invalid = {'"', (byte) 0xC3, (byte) 0x28, '"'};
        assertThat(canonicalJson.canonicalize(invalid)).isEmpty();
    }

    @Test
    void readsUtf16AndUtf32AndAByteOrderMarkByValue() {
        String json = "{\"b\":\"\u00e9\",\"a\":1}";
        byte[] utf8 = canonicalJson.canonicalize(json.getBytes(StandardCharsets.UTF_8)).orElseThrow();
        for (Charset charset : new Charset[] {StandardCharsets.UTF_16,
                StandardCharsets.UTF_16LE, StandardCharsets.UTF_16BE, Charset.forName("UTF-32")}) {
            assertThat(canonicalJson.canonicalize(json.getBytes(charset))).as(charset.name()).hasValue(utf8);
        }
        assertThat(canonicalJson.canonicalize(("\uFEFF" + json).getBytes(StandardCharsets.UTF_8))).hasValue(utf8);
    }

    @Test
    void neverThrowsOnArbitraryBytes() {
        Random random = new Random(42);
        byte[] valid = "{\"sites\":[{\"b\":1.50,\"a\":\"\\u00e9\"}],\"n\":-0e3,\"s\":[true,null]}"
                .getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < 5_000; i++) {
            byte[] input;
            if (i % 2 == 0) {
                input = new byte[random.nextInt(64)];
                random.nextBytes(input);
            } else {
                input = valid.clone();
                for (int flips = 1 + random.nextInt(3); flips > 0; flips--) {
                    input[random.nextInt(input.length)] = (byte) random.nextInt(256);
                }
            }
            byte[] fuzzed = input;
            assertThatCode(() -> canonicalJson.canonicalize(fuzzed)).doesNotThrowAnyException();
        }
    }

    @Test
    void returnsEmptyForTenThousandNestedArraysInsteadOfThrowing() {
        String deep = "[".repeat(10_000) + "]".repeat(10_000);
        assertThat(canonical(deep)).isEmpty();
    }

    @Test
    void acceptsNestingUpToJacksonsDefaultLimit() {
        String deep = "[".repeat(500) + "]".repeat(500);
        assertThat(canonical(deep)).contains(deep);
        String deepNamed = "{\"sites\":".repeat(499) + "1" + "}".repeat(499);
        assertThat(canonical(deepNamed)).contains(deepNamed);
    }

    @Test
    void rejectsNumbersLongerThanJacksonsDefaultLimit() {
        assertThat(canonical("1".repeat(1000))).isPresent();
        assertThat(canonical("1".repeat(1001))).isEmpty();
    }

    @Test
    void handlesAMegabyteBodyQuickly() {
        StringBuilder json = new StringBuilder("{\"sites\":[");
        for (int i = 0; json.length() < 1_048_576; i++) {
            json.append(i == 0 ? "" : ",")
                    .append("{\"url\":\"https://shop-").append(20_000 - i).append(".example\",\"weight\":")
                    .append(i).append(".50,\"tags\":[\"b\",\"a\"]}");
        }
        json.append("]}");
        long started = System.nanoTime();
        assertThat(canonical(json.toString())).isPresent();
        assertThat(System.nanoTime() - started).isLessThan(2_000_000_000L);
    }
}
