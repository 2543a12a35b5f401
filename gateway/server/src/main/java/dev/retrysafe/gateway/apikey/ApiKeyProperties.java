package dev.retrysafe.gateway.apikey;

import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * API keys of the runnable gateway, {@code idempotency.api-keys.*}: each key belongs to one tenant, and only the
 * SHA-256 of a key is configured. Checked when bound, so a faulty entry fails the startup with a message naming it.
 *
 * @param enabled Whether requests on the paths need an API key, whose tenant is then the idempotency tenant.
 * @param paths   Path patterns on the gateway port that need a key; the management port keeps its own security.
 * @param keys    The keys, each as keys[n].tenant (the tenant it acts for) and keys[n].sha256 (hex SHA-256 of the
 *                key; the key itself is never configured). Unset: no keys, refused at startup while enabled.
 */
@ConfigurationProperties("idempotency.api-keys")
public record ApiKeyProperties(@DefaultValue("false") boolean enabled, @DefaultValue("/**") List<String> paths,
        List<ApiKey> keys) {
    private static final Pattern SHA256_HEX = Pattern.compile("[0-9a-f]{64}");

    public ApiKeyProperties {
        paths = List.copyOf(paths);
        keys = keys == null ? List.of() : List.copyOf(keys);
        if (enabled) {
            check(keys);
        }
    }

    /**
     * One client's key.
     *
     * @param tenant the tenant the key acts for: the authenticated principal's name, so the idempotency scope
     * @param sha256 hex SHA-256 of the key ({@code printf %s "$KEY" | sha256sum})
     */
    public record ApiKey(String tenant, String sha256) {
        public ApiKey {
            sha256 = sha256 == null ? null : sha256.trim().toLowerCase(Locale.ROOT);
        }
    }

    private static void check(List<ApiKey> keys) {
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("idempotency.api-keys.enabled is true but no keys are configured "
                    + "(idempotency.api-keys.keys[n].tenant / .sha256)");
        }
        Set<String> hashes = new HashSet<>();
        for (int i = 0; i < keys.size(); i++) {
            ApiKey key = keys.get(i);
            String name = "idempotency.api-keys.keys[" + i + "]";
            if (key.tenant() == null || key.tenant().isBlank()) {
                throw new IllegalArgumentException(name + ".tenant must not be empty");
            }
            if (key.sha256() == null || key.sha256().isEmpty()) {
                throw new IllegalArgumentException(name + ".sha256 (tenant " + key.tenant() + ") is not set: give the "
                        + "hex SHA-256 of the tenant's key");
            }
            if (!SHA256_HEX.matcher(key.sha256()).matches()) {
                throw new IllegalArgumentException(name + ".sha256 (tenant " + key.tenant() + ") must be the 64 hex "
                        + "digits of the key's SHA-256, not the key itself");
            }
            if (!hashes.add(key.sha256())) {
                throw new IllegalArgumentException(name + ".sha256 (tenant " + key.tenant() + ") is listed twice: "
                        + "one key can act for one tenant only");
            }
        }
    }
}
