package dev.retrysafe.gateway.idempotency.scope;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import org.junit.jupiter.api.Test;

import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;

class IdempotencyScopeTest {

    private static final IdempotencyKey KEY = new IdempotencyKey("8f1c2d3e4a5b6c7d8e9f0a1b");

    @Test
    void hashIsStableBase64UrlOfSha256WithoutPadding() {
        String hash = new IdempotencyScope("tenant-a", "onboarding", KEY).hash();
        assertThat(hash)
                .isEqualTo(new IdempotencyScope("tenant-a", "onboarding", KEY).hash())
                .hasSize(43) // 32 bytes, base64 without padding
                .matches("[A-Za-z0-9_-]{43}");
    }

    @Test
    void theSameKeyFromTwoTenantsIsTwoScopes() {
        assertThat(new IdempotencyScope("tenant-a", "onboarding", KEY).hash())
                .isNotEqualTo(new IdempotencyScope("tenant-b", "onboarding", KEY).hash());
    }

    @Test
    void anonymousIsItsOwnTenant() {
        assertThat(new IdempotencyScope("", "onboarding", KEY).hash())
                .isNotEqualTo(new IdempotencyScope("tenant-a", "onboarding", KEY).hash());
    }

    @Test
    void theSameKeyOnTwoRoutesIsTwoScopes() {
        assertThat(new IdempotencyScope("tenant-a", "onboarding-create", KEY).hash())
                .isNotEqualTo(new IdempotencyScope("tenant-a", "onboarding-update", KEY).hash());
    }

    @Test
    void differentKeysAreDifferentScopes() {
        assertThat(new IdempotencyScope("tenant-a", "onboarding", KEY).hash())
                .isNotEqualTo(new IdempotencyScope("tenant-a", "onboarding",
                        new IdempotencyKey("8f1c2d3e4a5b6c7d8e9f0a1c")).hash());
    }

    @Test
    void partsCannotBeShiftedAcrossBoundaries() {
        assertThat(new IdempotencyScope("ab", "c", KEY).hash())
                .isNotEqualTo(new IdempotencyScope("a", "bc", KEY).hash());
        assertThat(new IdempotencyScope("t", "route" + "8f1c", new IdempotencyKey("2d3e4a5b6c7d8e9f0a1b")).hash())
                .isNotEqualTo(new IdempotencyScope("t", "route", new IdempotencyKey("8f1c2d3e4a5b6c7d8e9f0a1b")).hash());
    }

    @Test
    void neitherTheHashNorToStringRevealTheTenantOrKey() {
        IdempotencyScope scope = new IdempotencyScope("acme", "onboarding", new IdempotencyKey("acme_secret_key_0001"));
        assertThat(scope.hash()).doesNotContain("acme").doesNotContain("secret");
        assertThat(scope.toString())
                .isEqualTo("IdempotencyScope[hash=" + scope.hash() + "]")
                .doesNotContain("acme")
                .doesNotContain("secret");
    }

    @Test
    void requiresEveryPart() {
        assertThatNullPointerException().isThrownBy(() -> new IdempotencyScope(null, "onboarding", KEY));
        assertThatNullPointerException().isThrownBy(() -> new IdempotencyScope("t", null, KEY));
        assertThatNullPointerException().isThrownBy(() -> new IdempotencyScope("t", "onboarding", null));
    }
}
