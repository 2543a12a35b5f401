package dev.retrysafe.gateway.idempotency.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LookupTemplateTest {
    private static final LookupTemplate BY_TAX_ID = LookupTemplate.parse("/merchants/by-tax-id/{body:/taxId}");

    @Test
    void keepsOnlyTheValuesTheTemplateNames() {
        LookupTemplate template = LookupTemplate.parse("/merchants/{body:/merchant/taxId}/requests/{key}");

        Optional<Map<String, String>> values = template.values("key-1",
                body("{\"merchant\":{\"taxId\":\"ACME1234\",\"iban\":\"DE00\"},\"legalName\":\"ACME\"}"));

        assertThat(values).contains(Map.of("key", "key-1", "body:/merchant/taxId", "ACME1234"));
        assertThat(template.expand(values.get())).contains("/merchants/ACME1234/requests/key-1");
    }

    @Test
    void numbersAndBooleansAreTheirJsonText() {
        LookupTemplate template = LookupTemplate.parse("/orders/{body:/number}");
        assertThat(template.values("k", body("{\"number\":1234}"))).contains(Map.of("body:/number", "1234"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"{\"legalName\":\"ACME\"}", "{\"taxId\":null}", "{\"taxId\":\"\"}",
            "{\"taxId\":{\"a\":1}}", "{\"taxId\":[1]}", "not json", ""})
    void aRequestWithoutTheValueIsNotLookedUp(String body) {
        assertThat(BY_TAX_ID.values("k", body(body))).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"../../admin", "a?b=c", "%2e%2e", "http://evil", "a#frag", "a/b", "..%2f..",
            "\\..\\admin", "a b", "ünïcødé/☃", "\r\nHost: evil", "@evil.example", "//evil.example"})
    void aHostileValueStaysInItsSegment(String hostile) {
        String path = BY_TAX_ID.expand(Map.of("body:/taxId", hostile)).orElseThrow();

        URI lookup = URI.create("http://upstream:8081" + path);
        assertThat(lookup.getHost()).isEqualTo("upstream");
        assertThat(lookup.getRawQuery()).isNull();
        assertThat(lookup.getRawFragment()).isNull();
        assertThat(lookup.normalize().getRawPath()).isEqualTo(path).startsWith("/merchants/by-tax-id/");
        assertThat(path.substring("/merchants/by-tax-id/".length())).doesNotContain("/", "?", "#")
                .matches("[A-Za-z0-9\\-._~%]+");
        assertThat(lookup.getPath()).as("decoded, it is the value").isEqualTo("/merchants/by-tax-id/" + hostile);
    }

    @Test
    void aVeryLongValueStaysInItsSegment() {
        String hostile = "../".repeat(5000) + "?x=1";
        String path = BY_TAX_ID.expand(Map.of("body:/taxId", hostile)).orElseThrow();

        assertThat(path).startsWith("/merchants/by-tax-id/");
        assertThat(path.chars().filter(c -> c == '/').count()).isEqualTo(3);
    }

    @ParameterizedTest
    @ValueSource(strings = {".", ".."})
    void aValueThatWouldBeADotSegmentIsNotLookedUp(String dots) {
        assertThat(BY_TAX_ID.expand(Map.of("body:/taxId", dots))).isEmpty();
        assertThat(BY_TAX_ID.values("k", body("{\"taxId\":\"" + dots + "\"}"))).isEmpty();
        assertThat(LookupTemplate.parse("/merchants/tax-{body:/taxId}").expand(Map.of("body:/taxId", dots)))
                .as("within a segment it is just text").contains("/merchants/tax-" + dots);
    }

    @ParameterizedTest
    @ValueSource(strings = {"merchants/{key}", "//evil.example/{key}", "http://evil.example/{key}",
            "/merchants/{key}#x", "/merchants/{other}", "/merchants/{body:taxId}", "/merchants/../admin/{key}",
            "/merchants/./{key}", "/merchants//{key}", "/merchants/{key", "/merchants /{key}",
            "/payments?idempotency_key={key}#x", "/payments?idempotency_key={key}&tax={body:taxId}",
            "/payments?id={other}", "/payments?a b={key}", "/payments?id={key}&note=a b", "/payments?id=ü{key}",
            "/payments?id={key}&", "/payments?&id={key}", "/payments?id={key}&&tax=1", "/payments?",
            "/payments?=x&id={key}", "/payments?id=a=b&key={key}", "/payments?id={key}&x=}"})
    void aTemplateThatCouldLeaveItsPathOrQueryIsRefusedNamingTheArg(String template) {
        assertThatThrownBy(() -> LookupTemplate.parse(template)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("reconcile-uri");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/payments?{key}", "/payments?{key}=1", "/payments?id_{key}=1",
            "/payments?id={key}&{body:/taxId}=x", "/payments?a=1&{body:/taxId}"})
    void aPlaceholderInAQueryNameIsRefused(String template) {
        assertThatThrownBy(() -> LookupTemplate.parse(template)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("reconcile-uri placeholders go in query values, not in names");
    }

    @Test
    void placeholdersInQueryValuesAreEncodedAsQueryComponents() {
        LookupTemplate template = LookupTemplate.parse("/payments?idempotency_key={key}&tax={body:/taxId}");

        Optional<Map<String, String>> values = template.values("k&admin=1",
                body("{\"taxId\":\"DE 12+34/5#6?7=8%9ü\",\"amount\":100}"));

        assertThat(values).contains(Map.of("key", "k&admin=1", "body:/taxId", "DE 12+34/5#6?7=8%9ü"));
        assertThat(template.expand(values.get())).contains("/payments?idempotency_key=k%26admin%3D1"
                + "&tax=DE%2012%2B34%2F5%236%3F7%3D8%259%C3%BC");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/payments?idempotency_key={key}", "/payments/?idempotency_key={key}",
            "/?idempotency_key={key}", "/payments?expand&idempotency_key={key}",
            "/merchants/{body:/taxId}/payments?by=key:{key}&v=1.0;x,y@z/w?q~!$'()*+",
            "/payments?id={key}&path=../admin", "/payments?id=%7B{key}%7D"})
    void aPathWithAQueryOfLiteralNamesAndPlaceholderValuesIsAccepted(String template) {
        LookupTemplate parsed = LookupTemplate.parse(template);

        String lookup = parsed.expand(Map.of("key", "k-1", "body:/taxId", "ACME")).orElseThrow();
        assertThat(URI.create("http://upstream:8081" + lookup).getRawQuery()).isNotEmpty();
        assertThat(parsed.names()).contains("key");
    }

    @ParameterizedTest
    @ValueSource(strings = {".", ".."})
    void aDotValueInAQueryIsJustText(String dots) {
        LookupTemplate template = LookupTemplate.parse("/payments?ref={body:/taxId}");

        assertThat(template.expand(Map.of("body:/taxId", dots))).contains("/payments?ref=" + dots);
        assertThat(template.values("k", body("{\"taxId\":\"" + dots + "\"}"))).isPresent();
    }

    private static byte[] body(String json) {
        return json.getBytes(StandardCharsets.UTF_8);
    }
}
