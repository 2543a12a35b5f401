package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.retrysafe.gateway.idempotency.pointer.JsonPointer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Fingerprints by intent: ignored body fields and intent headers, with and without the remembered shortcut. */
class IntentFingerprintTest {

    private static final Set<String> ONBOARDING_UNORDERED = Set.of("integrations", "paymentMethods", "sites");
    private static final String ONBOARDING = "{\"name\":\"Tienda Uno\",\"taxId\":\"900123456\","
            + "\"sentAt\":\"2026-01-15T10:00:00Z\",\"integrations\":[{\"type\":\"SFTP\"},{\"type\":\"WEBHOOK\"}],"
            + "\"sites\":[\"https://uno.example\"]}";

    /**
     * Computed by the fingerprinter as it was before routes could ignore fields or name intent headers: a route
     * that uses neither keeps every fingerprint, so the records already in Redis stay valid.
     */
    private static final String ONBOARDING_FINGERPRINT = "38cb27feaf048f67db517e31199529804c01b563792fb178241c701764224e35";

    private static RequestFingerprinter fingerprinter(int remembered, List<String> ignored, List<String> headers) {
        return new RequestFingerprinter(new CanonicalJson(ONBOARDING_UNORDERED,
                ignored.stream().map(JsonPointer::parse).toList()), remembered, headers);
    }

    private static Fingerprint post(RequestFingerprinter fingerprinter, String body, Map<String, List<String>> headers) {
        Map<String, List<String>> byName = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        byName.putAll(headers);
        Function<String, List<String>> lookup = name -> byName.getOrDefault(name, List.of());
        return fingerprinter.fingerprint("POST", "/merchants", null, "application/json",
                body.getBytes(StandardCharsets.UTF_8), lookup);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 4096})
    void aRouteThatKeepsEveryFieldKeepsItsFingerprints(int remembered) {
        assertThat(post(fingerprinter(remembered, List.of(), List.of()), ONBOARDING, Map.of("X-Api-Version",
                List.of("2")))).isEqualTo(new Fingerprint(ONBOARDING_FINGERPRINT));
        assertThat(new RequestFingerprinter(new CanonicalJson(ONBOARDING_UNORDERED, List.of()), remembered, List.of())
                .fingerprint("POST", "/merchants", null, "application/json", ONBOARDING.getBytes(StandardCharsets.UTF_8)))
                .isEqualTo(new Fingerprint(ONBOARDING_FINGERPRINT));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 4096})
    void aRetryDifferingOnlyInAnIgnoredFieldHasTheSameFingerprint(int remembered) {
        RequestFingerprinter fingerprinter = fingerprinter(remembered, List.of("/sentAt"), List.of());
        Fingerprint first = post(fingerprinter, ONBOARDING, Map.of());
        Fingerprint retry = post(fingerprinter, ONBOARDING.replace("10:00:00Z", "10:00:07Z"), Map.of());

        assertThat(retry).isEqualTo(first).isNotEqualTo(new Fingerprint(ONBOARDING_FINGERPRINT));
    }

    @Test
    void theSameFieldNotIgnoredStillMakesADifferentRequest() {
        RequestFingerprinter fingerprinter = fingerprinter(4096, List.of(), List.of());

        assertThat(post(fingerprinter, ONBOARDING.replace("10:00:00Z", "10:00:07Z"), Map.of()))
                .isNotEqualTo(post(fingerprinter, ONBOARDING, Map.of()));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 4096})
    void anIntentHeaderThatDiffersMakesADifferentRequestEvenWithTheSameBodyBytes(int remembered) {
        RequestFingerprinter fingerprinter = fingerprinter(remembered, List.of(), List.of("X-Api-Version"));
        Fingerprint v1 = post(fingerprinter, ONBOARDING, Map.of("X-Api-Version", List.of("1")));

        assertThat(post(fingerprinter, ONBOARDING, Map.of("X-Api-Version", List.of("2")))).isNotEqualTo(v1);
        assertThat(post(fingerprinter, ONBOARDING, Map.of("x-api-version", List.of("1"))))
                .as("names compare without case").isEqualTo(v1);
        assertThat(post(fingerprinter, ONBOARDING, Map.of("X-Api-Version", List.of("1"), "X-Other", List.of("9"))))
                .as("a header not listed is not part of the request").isEqualTo(v1);
    }

    @Test
    void anIntentHeaderAbsentEmptyRepeatedOrJoinedAreFourDifferentRequests() {
        RequestFingerprinter fingerprinter = fingerprinter(0, List.of(), List.of("X-Api-Version"));

        assertThat(List.of(
                post(fingerprinter, ONBOARDING, Map.of()),
                post(fingerprinter, ONBOARDING, Map.of("X-Api-Version", List.of(""))),
                post(fingerprinter, ONBOARDING, Map.of("X-Api-Version", List.of("1", "2"))),
                post(fingerprinter, ONBOARDING, Map.of("X-Api-Version", List.of("1, 2"))),
                post(fingerprinter, ONBOARDING, Map.of("X-Api-Version", List.of("2", "1"))))).doesNotHaveDuplicates();
    }

    @Test
    void theOrderAndCaseTheRouteListsItsHeadersInChangeNothing() {
        Map<String, List<String>> headers = Map.of("X-Api-Version", List.of("2"), "X-Channel", List.of("web"));

        assertThat(post(fingerprinter(0, List.of(), List.of("X-Api-Version", "X-Channel")), ONBOARDING, headers))
                .isEqualTo(post(fingerprinter(0, List.of(), List.of("x-channel", "X-API-VERSION")), ONBOARDING, headers));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "X Api", "X-Api:", "Ümlaut"})
    void anIntentHeaderMustBeAHeaderName(String name) {
        assertThatIllegalArgumentException().isThrownBy(() -> fingerprinter(0, List.of(), List.of(name)))
                .withMessage("fingerprint-headers must be header names, was '" + name + "'");
    }
}
