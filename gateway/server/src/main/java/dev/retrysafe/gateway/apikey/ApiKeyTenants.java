package dev.retrysafe.gateway.apikey;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Which tenant a presented API key belongs to. Only SHA-256 digests of the keys are held: the configuration and a
 * memory dump reveal no usable key. Keys are random secrets, not passwords, so a fast unsalted digest is enough,
 * and looking a digest up in a map leaks nothing about the keys through timing (the caller cannot choose digests).
 */
final class ApiKeyTenants {
    private final Map<String, String> tenantByDigest = new HashMap<>();

    ApiKeyTenants(List<ApiKeyProperties.ApiKey> keys) {
        keys.forEach(key -> tenantByDigest.put(key.sha256(), key.tenant()));
    }

    Optional<String> tenantOf(String presentedKey) {
        return Optional.ofNullable(tenantByDigest.get(sha256Hex(presentedKey)));
    }

    static String sha256Hex(String key) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(key.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
