package dev.retrysafe.gateway.idempotency.fingerprint;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * SHA-256 over a sequence of parts, each prefixed with its length, so that parts cannot bleed into each other:
 * ("ab", "c") and ("a", "bc") hash differently. One instance per hash; not thread-safe.
 */
public final class PartsDigest {
    private final MessageDigest sha256;
    private final byte[] lengthPrefix = new byte[Integer.BYTES];

    public PartsDigest() {
        try {
            sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("Every Java platform must provide SHA-256", e);
        }
    }

    public PartsDigest add(byte[] part) {
        int length = part.length;
        lengthPrefix[0] = (byte) (length >>> 24);
        lengthPrefix[1] = (byte) (length >>> 16);
        lengthPrefix[2] = (byte) (length >>> 8);
        lengthPrefix[3] = (byte) length;
        sha256.update(lengthPrefix);
        sha256.update(part);
        return this;
    }

    public PartsDigest add(String part) {
        return add(part.getBytes(StandardCharsets.UTF_8));
    }

    public byte[] digest() {
        return sha256.digest();
    }
}
