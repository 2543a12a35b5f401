package dev.retrysafe.gateway.apikey;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.List;
import org.junit.jupiter.api.Test;

class ApiKeyPropertiesTest {
    static final String ACME_DIGEST = ApiKeyTenants.sha256Hex("acme-secret-key");

    static ApiKeyProperties enabled(ApiKeyProperties.ApiKey... keys) {
        return new ApiKeyProperties(true, List.of("/**"), List.of(keys));
    }

    @Test
    void aKeyIsKnownOnlyByItsDigestAndNamesItsTenant() {
        ApiKeyTenants tenants = new ApiKeyTenants(enabled(new ApiKeyProperties.ApiKey("acme", ACME_DIGEST.toUpperCase()))
                .keys());

        assertThat(tenants.tenantOf("acme-secret-key")).contains("acme");
        assertThat(tenants.tenantOf(ACME_DIGEST)).isEmpty();
        assertThat(tenants.tenantOf("acme-secret-key ")).isEmpty();
    }

    @Test
    void enabledWithoutKeysFailsTheStartup() {
        assertThatIllegalArgumentException().isThrownBy(ApiKeyPropertiesTest::enabled)
                .withMessageContaining("no keys are configured");
        assertThat(new ApiKeyProperties(false, List.of("/**"), null).keys()).isEmpty();
    }

    @Test
    void aKeyInsteadOfItsDigestFailsTheStartupWithoutShowingIt() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> enabled(new ApiKeyProperties.ApiKey("acme", "acme-secret-key")))
                .withMessageContaining("keys[0].sha256 (tenant acme)").withMessageContaining("not the key itself")
                .withMessageNotContaining("acme-secret-key");
    }

    @Test
    void aDigestLeftEmptyIsNamedAsSuch() {
        assertThatIllegalArgumentException().isThrownBy(() -> enabled(new ApiKeyProperties.ApiKey("acme", "")))
                .withMessageContaining("keys[0].sha256 (tenant acme) is not set");
    }

    @Test
    void aTenantIsRequired() {
        assertThatIllegalArgumentException().isThrownBy(() -> enabled(new ApiKeyProperties.ApiKey(" ", ACME_DIGEST)))
                .withMessageContaining("keys[0].tenant");
    }

    @Test
    void oneKeyCannotActForTwoTenants() {
        assertThatIllegalArgumentException().isThrownBy(() -> enabled(new ApiKeyProperties.ApiKey("acme", ACME_DIGEST),
                        new ApiKeyProperties.ApiKey("globex", ACME_DIGEST)))
                .withMessageContaining("keys[1].sha256 (tenant globex) is listed twice");
    }
}
