package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Optional AES-256-GCM encryption of stored responses, {@code idempotency.encryption.*}: off while no
 * {@code active-key} is set. Checked when bound, so a faulty key fails the startup with a message naming it.
 *
 * @param keys      AES-256 keys for stored responses, by id ([A-Za-z0-9_-], at most 32 characters): base64 of 32
 *                  random bytes (openssl rand -base64 32). Keep a retired key here for as long as records written
 *                  under it may be replayed (the retention). Unset: no keys.
 * @param activeKey Id of the key that encrypts new records; setting it turns encryption on. Unset: stored
 *                  responses are not encrypted.
 */
@ConfigurationProperties("idempotency.encryption")
public record EncryptionProperties(Map<String, String> keys, String activeKey) {

    public EncryptionProperties {
        keys = keys == null ? Map.of() : Map.copyOf(keys);
        toKeys(keys, activeKey);
    }

    public EncryptionKeys toKeys() {
        return toKeys(keys, activeKey);
    }

    private static EncryptionKeys toKeys(Map<String, String> keys, String activeKey) {
        if (keys.isEmpty() && (activeKey == null || activeKey.isBlank())) {
            return EncryptionKeys.none();
        }
        try {
            return EncryptionKeys.fromBase64(keys, activeKey);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("idempotency.encryption: " + e.getMessage(), e);
        }
    }
}
