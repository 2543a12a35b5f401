package dev.retrysafe.gateway.idempotency.fingerprint;

import java.util.HexFormat;
import java.util.Objects;

/** The SHA-256 of a request's meaningful content, as 64 lowercase hex characters. Not secret. */
public record Fingerprint(String hex) {

    private static final int SHA_256_BYTES = 32;

    public Fingerprint {
        Objects.requireNonNull(hex, "hex");
        if (hex.length() != SHA_256_BYTES * 2 || !isLowercaseHex(hex)) {
            throw new IllegalArgumentException("A fingerprint is 64 lowercase hex characters, got: " + hex);
        }
    }

    /** @param sha256 a 32-byte SHA-256 digest */
    public static Fingerprint ofDigest(byte[] sha256) {
        Objects.requireNonNull(sha256, "sha256");
        if (sha256.length != SHA_256_BYTES) {
            throw new IllegalArgumentException("A SHA-256 digest has 32 bytes, got " + sha256.length);
        }
        return new Fingerprint(HexFormat.of().formatHex(sha256));
    }

    private static boolean isLowercaseHex(String candidate) {
        for (int i = 0; i < candidate.length(); i++) {
            char c = candidate.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
        }
        return true;
    }
}
