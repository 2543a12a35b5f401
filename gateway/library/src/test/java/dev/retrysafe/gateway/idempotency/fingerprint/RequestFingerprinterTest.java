package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RequestFingerprinterTest {

    private static final String JSON = "application/json";
    private static final String CREATE = "/merchants";
    private static final String UPDATE = "/merchants/m-123";

    private static final String MERCHANT = """
            {
              "name": "Tienda Uno",
              "settings": {"currency": "COP", "autoCapture": true, "limits": {"daily": 1000000}},
              "integrations": [{"type": "WEBHOOK", "url": "https://a.example/hook"}, {"type": "SFTP"}],
              "paymentMethods": [{"type": "CARD", "brand": "VISA"}, {"type": "CARD", "brand": "AMEX"}, {"type": "PSE"}],
              "sites": ["https://uno.example", "https://dos.example"],
              "contacts": [{"email": "a@uno.example"}, {"email": "b@uno.example"}]
            }
            """;

    private final RequestFingerprinter fingerprinter =
            new RequestFingerprinter(new CanonicalJson(Set.of("integrations", "paymentMethods", "sites"), List.of()), 0,
                    List.of());

    private Fingerprint post(String body) {
        return fingerprinter.fingerprint("POST", CREATE, null, JSON, utf8(body));
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void sameRequestSameFingerprint() {
        assertThat(post(MERCHANT)).isEqualTo(post(MERCHANT));
    }

    @Test
    void ignoresKeyOrderAndWhitespace() {
        String reordered = """
                {"sites":["https://uno.example","https://dos.example"],"name":"Tienda Uno",
                "contacts":[{"email":"a@uno.example"},{"email":"b@uno.example"}],
                "paymentMethods":[{"brand":"VISA","type":"CARD"},{"brand":"AMEX","type":"CARD"},{"type":"PSE"}],
                "integrations":[{"url":"https://a.example/hook","type":"WEBHOOK"},{"type":"SFTP"}],
                "settings":{"limits":{"daily":1000000},"autoCapture":true,"currency":"COP"}}""";
        assertThat(post(reordered)).isEqualTo(post(MERCHANT));
    }

    @Test
    void ignoresTheOrderOfTheThreeOnboardingCollections() {
        String reordered = MERCHANT
                .replace("[{\"type\": \"WEBHOOK\", \"url\": \"https://a.example/hook\"}, {\"type\": \"SFTP\"}]",
                        "[{\"type\": \"SFTP\"}, {\"type\": \"WEBHOOK\", \"url\": \"https://a.example/hook\"}]")
                .replace("[{\"type\": \"CARD\", \"brand\": \"VISA\"}, {\"type\": \"CARD\", \"brand\": \"AMEX\"}, {\"type\": \"PSE\"}]",
                        "[{\"type\": \"PSE\"}, {\"brand\": \"AMEX\", \"type\": \"CARD\"}, {\"type\": \"CARD\", \"brand\": \"VISA\"}]")
                .replace("[\"https://uno.example\", \"https://dos.example\"]",
                        "[\"https://dos.example\", \"https://uno.example\"]");
        assertThat(reordered).isNotEqualTo(MERCHANT);
        assertThat(post(reordered)).isEqualTo(post(MERCHANT));
    }

    @Test
    void respectsTheOrderOfOtherArrays() {
        String reordered = MERCHANT.replace(
                "[{\"email\": \"a@uno.example\"}, {\"email\": \"b@uno.example\"}]",
                "[{\"email\": \"b@uno.example\"}, {\"email\": \"a@uno.example\"}]");
        assertThat(reordered).isNotEqualTo(MERCHANT);
        assertThat(post(reordered)).isNotEqualTo(post(MERCHANT));
    }

    @Test
    void oneFieldChangedInsideSettingsIsADifferentRequest() {
        String changed = MERCHANT.replace("\"autoCapture\": true", "\"autoCapture\": false");
        assertThat(changed).isNotEqualTo(MERCHANT);
        assertThat(post(changed)).isNotEqualTo(post(MERCHANT));
    }

    @Test
    void theMerchantInThePathIsPartOfTheRequest() {
        byte[] body = utf8(MERCHANT);
        assertThat(fingerprinter.fingerprint("PUT", "/merchants/m-123", null, JSON, body))
                .isNotEqualTo(fingerprinter.fingerprint("PUT", "/merchants/m-456", null, JSON, body));
    }

    @Test
    void theMethodIsPartOfTheRequestInAnyCase() {
        byte[] body = utf8(MERCHANT);
        assertThat(fingerprinter.fingerprint("PUT", UPDATE, null, JSON, body))
                .isNotEqualTo(fingerprinter.fingerprint("POST", UPDATE, null, JSON, body))
                .isEqualTo(fingerprinter.fingerprint("put", UPDATE, null, JSON, body));
    }

    @Test
    void ignoresTheOrderOfQueryParameterNames() {
        assertThat(fingerprinter.fingerprint("POST", CREATE, "b=2&a=1", JSON, utf8("{}")))
                .isEqualTo(fingerprinter.fingerprint("POST", CREATE, "a=1&b=2", JSON, utf8("{}")));
    }

    @Test
    void keepsTheOrderOfRepeatedQueryParameters() {
        assertThat(fingerprinter.fingerprint("POST", CREATE, "a=1&a=2", JSON, utf8("{}")))
                .isNotEqualTo(fingerprinter.fingerprint("POST", CREATE, "a=2&a=1", JSON, utf8("{}")));
        assertThat(RequestFingerprinter.canonicalQuery("z=0&a=2&b=1&a=1&flag")).isEqualTo("a=2&a=1&b=1&flag&z=0");
    }

    @Test
    void queryValuesMatter() {
        assertThat(fingerprinter.fingerprint("POST", CREATE, "a=1", JSON, utf8("{}")))
                .isNotEqualTo(fingerprinter.fingerprint("POST", CREATE, "a=2", JSON, utf8("{}")));
    }

    @Test
    void aMissingAndAnEmptyQueryAreTheSame() {
        assertThat(fingerprinter.fingerprint("POST", CREATE, null, JSON, utf8("{}")))
                .isEqualTo(fingerprinter.fingerprint("POST", CREATE, "", JSON, utf8("{}")));
    }

    @Test
    void partsCannotBleedIntoEachOther() {
        assertThat(fingerprinter.fingerprint("POST", "/merchants/a", "b=1", null, null))
                .isNotEqualTo(fingerprinter.fingerprint("POST", "/merchants/ab=1", null, null, null));
        assertThat(fingerprinter.fingerprint("POST", "/p", null, "text/plain", utf8("x")))
                .isNotEqualTo(fingerprinter.fingerprint("POST", "/px", null, "text/plain", null));
    }

    @Test
    void nonJsonBodiesAreComparedByteForByte() {
        String form = "application/x-www-form-urlencoded";
        assertThat(fingerprinter.fingerprint("POST", CREATE, null, form, utf8("a=1&b=2")))
                .isEqualTo(fingerprinter.fingerprint("POST", CREATE, null, form, utf8("a=1&b=2")))
                .isNotEqualTo(fingerprinter.fingerprint("POST", CREATE, null, form, utf8("b=2&a=1")));
        byte[] binary = {0, 1, 2, (byte) 0xFF};
        assertThat(fingerprinter.fingerprint("POST", CREATE, null, "application/octet-stream", binary))
                .isNotEqualTo(fingerprinter.fingerprint("POST", CREATE, null, "application/octet-stream",
                        new byte[] {0, 1, 2, (byte) 0xFE}));
    }

    @Test
    void jsonWithoutAJsonContentTypeIsComparedByteForByte() {
        assertThat(fingerprinter.fingerprint("POST", CREATE, null, "text/plain", utf8("{\"a\":1,\"b\":2}")))
                .isNotEqualTo(fingerprinter.fingerprint("POST", CREATE, null, "text/plain", utf8("{\"b\":2,\"a\":1}")));
        assertThat(fingerprinter.fingerprint("POST", CREATE, null, null, utf8("{\"a\":1,\"b\":2}")))
                .isNotEqualTo(fingerprinter.fingerprint("POST", CREATE, null, null, utf8("{\"b\":2,\"a\":1}")));
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "application/json", "application/json; charset=UTF-8", "Application/JSON;charset=utf-8",
            " application/json ", "application/problem+json", "application/vnd.retrysafe.merchant+json; v=2"})
    void recognisesJsonContentTypes(String contentType) {
        assertThat(fingerprinter.fingerprint("POST", CREATE, null, contentType, utf8("{\"a\":1,\"b\":2}")))
                .isEqualTo(fingerprinter.fingerprint("POST", CREATE, null, contentType, utf8("{ \"b\":2, \"a\":1 }")));
    }

    @ParameterizedTest
    @ValueSource(strings = {"text/plain", "application/jsonx", "application/+json", "json", "", "application/xml"})
    void doesNotTreatOtherContentTypesAsJson(String contentType) {
        assertThat(RequestFingerprinter.isJson(contentType)).isFalse();
    }

    @Test
    void invalidJsonFallsBackToRawBytes() {
        // Still fingerprintable, and now sensitive to every byte, whitespace included.
        assertThat(post("{\"a\":1,")).isEqualTo(post("{\"a\":1,"));
        assertThat(post("{\"a\":1,")).isNotEqualTo(post("{\"a\": 1,"));
    }

    @Test
    void aRawBodyNeverCollidesWithTheSameCanonicalJson() {
        // Same bytes: one is canonical JSON, the other a raw text body.
        assertThat(fingerprinter.fingerprint("POST", CREATE, null, JSON, utf8("{\"a\":1}")))
                .isNotEqualTo(fingerprinter.fingerprint("POST", CREATE, null, "text/plain", utf8("{\"a\":1}")));
    }

    @Test
    void duplicateKeysFallBackToRawBytes() {
        assertThat(post("{\"a\":1,\"a\":2}")).isNotEqualTo(post("{\"a\":2}"));
        assertThat(post("{\"a\":1,\"a\":2}")).isNotEqualTo(post("{\"a\":1, \"a\":2}"));
    }

    @Test
    void numbersCompareByValue() {
        assertThat(post("{\"amount\":1}")).isEqualTo(post("{\"amount\":1.0}"));
        assertThat(post("{\"amount\":1}")).isNotEqualTo(post("{\"amount\":2}"));
    }

    @Test
    void typesMatter() {
        assertThat(post("{\"v\":\"1\"}")).isNotEqualTo(post("{\"v\":1}"));
        assertThat(post("{\"v\":true}")).isNotEqualTo(post("{\"v\":\"true\"}"));
        assertThat(post("{\"v\":null}")).isNotEqualTo(post("{}"));
    }

    @Test
    void aMissingBodyIsAnEmptyRawBody() {
        assertThat(fingerprinter.fingerprint("POST", CREATE, null, null, null))
                .isEqualTo(fingerprinter.fingerprint("POST", CREATE, null, "text/plain", new byte[0]))
                .isEqualTo(fingerprinter.fingerprint("POST", CREATE, null, JSON, null));
    }

    @Test
    void producesSha256Hex() {
        assertThat(post(MERCHANT).hex()).hasSize(64).matches("[0-9a-f]{64}");
    }
}
