package dev.retrysafe.gateway.idempotency.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A route's lookup credentials: read as written, refused when malformed, never shown. */
class ReconciliationTest {
    static final LookupTemplate TEMPLATE = LookupTemplate.parse("/orders/{key}");

    @Test
    void headersAreNameColonValueWithTheValueKeptWholeAndTrimmed() {
        assertThat(Reconciliation.parseHeaders(List.of("Authorization: Bearer a:b=c", "X-Api-Key:k1")))
                .containsExactly(Map.entry("Authorization", "Bearer a:b=c"), Map.entry("X-Api-Key", "k1"));
    }

    @Test
    void aMalformedEntryIsRefusedWithoutEchoingIt() {
        assertThatIllegalArgumentException().isThrownBy(() -> Reconciliation.parseHeaders(List.of("s3cr3t-token")))
                .withMessageContaining("reconcile-headers").withMessageNotContaining("s3cr3t");
        assertThatIllegalArgumentException().isThrownBy(() -> reconciliation(Map.of("Bad Name", "v"), List.of()))
                .withMessageContaining("reconcile-headers");
        assertThatIllegalArgumentException().isThrownBy(() -> reconciliation(Map.of("X", "a\r\nHost: evil"), List.of()))
                .withMessageContaining("one line").withMessageNotContaining("evil");
        assertThatIllegalArgumentException().isThrownBy(() -> reconciliation(Map.of(), List.of("Author ization")))
                .withMessageContaining("reconcile-forward-headers");
    }

    @Test
    void itsTextNamesTheHeadersButNeverTheirValues() {
        String text = reconciliation(Map.of("Authorization", "Bearer s3cr3t"), List.of("X-Tenant")).toString();
        assertThat(text).contains("Authorization", "X-Tenant").doesNotContain("s3cr3t");
    }

    private static Reconciliation reconciliation(Map<String, String> headers, List<String> forward) {
        return new Reconciliation(TEMPLATE, Optional.empty(), 200, 404, headers, forward);
    }
}
