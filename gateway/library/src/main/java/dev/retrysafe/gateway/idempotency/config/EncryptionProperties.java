package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Optional AES-256-GCM encryption of stored responses, {@code idempotency.encryption.*}: off while no
 * {@code active-key} is set. Checked when bound, so a faulty key fails the startup with a message naming it.
 *
 * @param keys      key id to base64 of a 256-bit key; keep retired keys here for as long as records written under
 *                  them may still be replayed (the retention)
 * @param activeKey the id of the key that encrypts new records
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
