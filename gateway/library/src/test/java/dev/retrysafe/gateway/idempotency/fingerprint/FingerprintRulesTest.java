package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.pointer.JsonPointer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A record remembers the rules it was fingerprinted under and its strict fingerprint, so that a retry judged under
 * other rules (a change rolling through the fleet, two routes of one operation) is still recognised.
 */
class FingerprintRulesTest {
    private static final Set<String> ONBOARDING_UNORDERED = Set.of("integrations", "paymentMethods", "sites");
    private static final String BODY = "{\"legalName\":\"ACME\",\"paymentMethods\":[\"CARD\",\"PIX\"],"
            + "\"sentAt\":\"2026-12-05T10:00:00Z\"}";
    /** The same intent as {@link #BODY} for a route that ignores sentAt; another one for a route that does not. */
    private static final String RESTAMPED = BODY.replace("10:00:00Z", "10:00:07Z");
    /** The same bytes up to the canonical form: members reordered, whitespace. */
    private static final String REORDERED_MEMBERS = "{ \"sentAt\":\"2026-12-05T10:00:00Z\", \"legalName\":\"ACME\","
            + " \"paymentMethods\":[\"CARD\",\"PIX\"] }";

    private static RequestFingerprinter route(Set<String> unordered, List<String> ignored, List<String> headers,
            int remembered) {
        return new RequestFingerprinter(new CanonicalJson(unordered, ignored.stream().map(JsonPointer::parse).toList()),
                remembered, headers);
    }

    private static Fingerprints post(RequestFingerprinter route, String body, String apiVersion) {
        return route.fingerprints("POST", "/merchants", null, "application/json",
                body.getBytes(StandardCharsets.UTF_8),
                name -> name.equalsIgnoreCase("X-Api-Version") ? List.of(apiVersion) : List.of());
    }

    @Test
    void theRulesTextNamesEveryRuleSortedSoTheOrderARouteListsThemInChangesNothing() {
        FingerprintRules rules = route(Set.of("sites", "integrations"), List.of("/sentAt", "/meta/*/id"),
                List.of("X-Api-Version"), 0).rules();
        assertThat(rules.id()).isEqualTo("c1;arrays=integrations,sites;ignore=/meta/*/id,/sentAt;headers=x-api-version");
        assertThat(route(Set.of("integrations", "sites"), List.of("/meta/*/id", "/sentAt"), List.of("x-api-VERSION"), 0)
                .rules()).isEqualTo(rules);
        assertThat(route(Set.of(), List.of(), List.of(), 0).rules()).isEqualTo(FingerprintRules.NONE);
        assertThat(FingerprintRules.NONE.id()).isEqualTo(FingerprintRules.CANONICAL_VERSION);
    }

    @Test
    void aNameHoldingASeparatorCannotPassForTwoRulesAndALongRuleSetIsKeptAsItsDigest() {
        assertThat(FingerprintRules.of(Set.of("a,b"), List.of(), List.of()))
                .isNotEqualTo(FingerprintRules.of(Set.of("a", "b"), List.of(), List.of()));
        assertThat(FingerprintRules.of(Set.of("a;ignore=/x"), List.of(), List.of()).id())
                .isEqualTo("c1;arrays=a%3Bignore%3D/x");
        assertThat(FingerprintRules.of(Set.of("línea\nnueva"), List.of(), List.of()).id()).doesNotContain("\n");
        FingerprintRules many = FingerprintRules.of(Set.of("x".repeat(300)), List.of(), List.of());
        assertThat(many.id()).startsWith("c1;sha256=").hasSizeLessThanOrEqualTo(FingerprintRules.MAX_ID_LENGTH);
        assertThat(FingerprintRules.of(Set.of("y".repeat(300)), List.of(), List.of())).isNotEqualTo(many);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 64})
    void onARouteWithoutRulesTheStrictFingerprintIsTheFingerprint(int remembered) {
        Fingerprints plain = post(route(Set.of(), List.of(), List.of(), remembered), BODY, "2");
        assertThat(plain.strict()).isEqualTo(plain.fingerprint());
        assertThat(plain.rules()).isEqualTo("c1");
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 64})
    void theStrictFingerprintIsTheCanonicalFormWithNoRouteRule(int remembered) {
        RequestFingerprinter shipped = route(ONBOARDING_UNORDERED, List.of(), List.of(), remembered);
        RequestFingerprinter ignoring = route(ONBOARDING_UNORDERED, List.of("/sentAt"), List.of("X-Api-Version"),
                remembered);
        RequestFingerprinter none = route(Set.of(), List.of(), List.of(), remembered);

        Fingerprints viaShipped = post(shipped, BODY, "2");
        Fingerprints viaIgnoring = post(ignoring, BODY, "3");
        assertThat(viaShipped.fingerprint()).isNotEqualTo(viaIgnoring.fingerprint());
        assertThat(viaShipped.strict()).isEqualTo(viaIgnoring.strict())
                .isEqualTo(post(none, BODY, "2").fingerprint())
                .isEqualTo(post(none, REORDERED_MEMBERS, "2").fingerprint());
        assertThat(post(ignoring, RESTAMPED, "3").strict()).isNotEqualTo(viaIgnoring.strict());
    }

    @Test
    void anIdenticalRetryUnderOtherRulesIsTheSameIntentInBothDirections() {
        RequestFingerprinter shipped = route(ONBOARDING_UNORDERED, List.of(), List.of(), 0);
        RequestFingerprinter ignoring = route(ONBOARDING_UNORDERED, List.of("/sentAt"), List.of(), 0);
        Fingerprints first = post(shipped, BODY, "2");
        Fingerprints retry = post(ignoring, BODY, "2");

        assertThat(retry.fingerprint()).isNotEqualTo(first.fingerprint());
        assertThat(retry.rulesDifferFrom(first)).isTrue();
        assertThat(retry.sameIntentAs(first)).isTrue();
        assertThat(first.sameIntentAs(retry)).isTrue();
        assertThat(post(ignoring, REORDERED_MEMBERS, "2").sameIntentAs(first)).as("up to the canonical form").isTrue();
    }

    @Test
    void underOtherRulesAPayloadTheStrictFingerprintTellsApartIsAnotherIntent() {
        RequestFingerprinter shipped = route(ONBOARDING_UNORDERED, List.of(), List.of(), 0);
        RequestFingerprinter ignoring = route(ONBOARDING_UNORDERED, List.of("/sentAt"), List.of(), 0);
        Fingerprints first = post(shipped, BODY, "2");

        assertThat(post(ignoring, BODY.replace("ACME", "OTHER"), "2").sameIntentAs(first)).isFalse();
        // What only the new rule forgives cannot be told from the old record: judged as today, another payload.
        assertThat(post(ignoring, RESTAMPED, "2").sameIntentAs(first)).isFalse();
        assertThat(post(shipped, BODY.replace("[\"CARD\",\"PIX\"]", "[\"PIX\",\"CARD\"]"), "2")
                .sameIntentAs(post(ignoring, BODY, "2")))
                .as("an unordered array reordered across the change: its strict fingerprints differ").isFalse();
    }

    @Test
    void underTheSameRulesOnlyTheFingerprintCountsNotTheStrictOne() {
        RequestFingerprinter versioned = route(Set.of(), List.of(), List.of("X-Api-Version"), 0);
        Fingerprints v2 = post(versioned, BODY, "2");
        Fingerprints v3 = post(versioned, BODY, "3");
        assertThat(v3.strict()).as("headers are no part of the strict fingerprint").isEqualTo(v2.strict());
        assertThat(v3.sameIntentAs(v2)).as("the route says the header is part of the intent").isFalse();
    }

    @Test
    void aRecordWrittenBeforeRecordsKeptTheirRulesIsComparedByItsFingerprintOnly() {
        RequestFingerprinter shipped = route(ONBOARDING_UNORDERED, List.of(), List.of(), 0);
        RequestFingerprinter ignoring = route(ONBOARDING_UNORDERED, List.of("/sentAt"), List.of(), 0);
        Fingerprints former = Fingerprints.ofFormerRecord(post(shipped, BODY, "2").fingerprint());

        assertThat(post(shipped, BODY, "2").sameIntentAs(former)).isTrue();
        assertThat(post(ignoring, BODY, "2").rulesDifferFrom(former)).isFalse();
        assertThat(post(ignoring, BODY, "2").sameIntentAs(former)).as("its rules and strict fingerprint are unknown")
                .isFalse();
    }
}
