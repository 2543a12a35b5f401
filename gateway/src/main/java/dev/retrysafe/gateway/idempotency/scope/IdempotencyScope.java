package dev.retrysafe.gateway.idempotency.scope;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.Objects;

import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;

/**
 * Where a key is unique: the same key sent by two tenants, or to two routes, names two different
 * operations.
 *
 * @param tenant  who sent the request; {@code ""} for anonymous requests
 * @param routeId the gateway route the request matched
 * @param key     the client's idempotency key
 */
public record IdempotencyScope(String tenant, String routeId, IdempotencyKey key) {

    public IdempotencyScope {
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(routeId, "routeId");
        Objects.requireNonNull(key, "key");
    }

    /**
     * Base64url (no padding) SHA-256 of the length-prefixed tenant, route id and key: the only form
     * of the scope that may reach Redis key names, so Redis never holds the raw tenant or key.
     * Length prefixes keep ("ab", "c") apart from ("a", "bc").
     */
    public String hash() {
        MessageDigest sha256 = newSha256();
        updateWithPart(sha256, tenant);
        updateWithPart(sha256, routeId);
        updateWithPart(sha256, key.value());
        return Base64.getUrlEncoder().withoutPadding().encodeToString(sha256.digest());
    }

    /** Shows the hash only: the tenant and the key must never reach logs. */
    @Override
    public String toString() {
        return "IdempotencyScope[hash=" + hash() + "]";
    }

    private static void updateWithPart(MessageDigest digest, String part) {
        byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
        digest.update(ByteBuffer.allocate(Integer.BYTES).putInt(bytes.length).array());
        digest.update(bytes);
    }

    private static MessageDigest newSha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("Every Java platform must provide SHA-256", e);
        }
    }
}
