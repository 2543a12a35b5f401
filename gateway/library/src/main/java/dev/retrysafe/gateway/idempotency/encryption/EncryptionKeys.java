package dev.retrysafe.gateway.idempotency.encryption;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Pattern;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * AES-256-GCM keys by id. New data is sealed under the active key; data sealed under any key still configured
 * stays readable, so the active key can change without losing what was written before (rotation). Every seal uses
 * a fresh random 96-bit nonce, and the key id and the caller's associated data are authenticated with the
 * ciphertext: a ciphertext moved to another record, or relabelled with another key id, does not open.
 */
public final class EncryptionKeys {
    private static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9_-]{1,32}");
    private static final int KEY_BYTES = 32;
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final EncryptionKeys NONE = new EncryptionKeys(Map.of(), null);

    private final Map<String, SecretKey> keys;
    private final String activeId;

    private EncryptionKeys(Map<String, SecretKey> keys, String activeId) {
        this.keys = Map.copyOf(keys);
        this.activeId = activeId;
    }

    /** No keys: nothing is sealed, and nothing sealed can be opened. */
    public static EncryptionKeys none() {
        return NONE;
    }

    /**
     * @param base64ById key id to base64 (standard or URL-safe alphabet) of a 256-bit key
     * @param activeId   the id of the key that seals new data; must be one of {@code base64ById}
     * @throws IllegalArgumentException naming the faulty key id, never showing key material
     */
    public static EncryptionKeys fromBase64(Map<String, String> base64ById, String activeId) {
        if (base64ById.isEmpty()) {
            throw new IllegalArgumentException("active key '" + activeId + "' is set but no keys are configured");
        }
        Map<String, SecretKey> keys = new TreeMap<>();
        base64ById.forEach((id, base64) -> keys.put(checkedId(id), new SecretKeySpec(decode(id, base64), "AES")));
        if (activeId == null || activeId.isBlank()) {
            throw new IllegalArgumentException("keys are configured but no active key is named: set the id of the "
                    + "key that encrypts new records");
        }
        if (!keys.containsKey(activeId)) {
            throw new IllegalArgumentException("active key '" + activeId + "' is not one of the configured keys "
                    + keys.keySet());
        }
        return new EncryptionKeys(keys, activeId);
    }

    public boolean enabled() {
        return activeId != null;
    }

    /** Seals {@code plaintext} under the active key. */
    public Sealed seal(byte[] plaintext, byte[] associatedData) {
        if (!enabled()) {
            throw new IllegalStateException("No encryption key is configured");
        }
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        try {
            Cipher cipher = cipher(Cipher.ENCRYPT_MODE, keys.get(activeId), activeId, nonce, associatedData);
            return new Sealed(activeId, nonce, cipher.doFinal(plaintext));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is not available", e);
        }
    }

    /**
     * @throws CannotOpen when the key id is not configured (removed after a rotation) or the ciphertext does not
     *                    authenticate with this associated data (tampered, or copied from another record)
     */
    public byte[] open(Sealed sealed, byte[] associatedData) {
        SecretKey key = keys.get(sealed.keyId());
        if (key == null) {
            throw new CannotOpen("key '" + sealed.keyId() + "' is not configured (removed?)");
        }
        if (sealed.nonce().length != NONCE_BYTES) {
            throw new CannotOpen("nonce of " + sealed.nonce().length + " bytes");
        }
        try {
            return cipher(Cipher.DECRYPT_MODE, key, sealed.keyId(), sealed.nonce(), associatedData)
                    .doFinal(sealed.ciphertext());
        } catch (AEADBadTagException e) {
            throw new CannotOpen("authentication failed under key '" + sealed.keyId()
                    + "': the ciphertext was altered or belongs to another record");
        } catch (GeneralSecurityException e) {
            throw new CannotOpen("decryption failed under key '" + sealed.keyId() + "': " + e);
        }
    }

    /** Which keys, never their bytes: safe to log. */
    @Override
    public String toString() {
        return enabled() ? "AES-256-GCM, active key '" + activeId + "', keys " + new TreeMap<>(keys).keySet() : "none";
    }

    private static Cipher cipher(int mode, SecretKey key, String keyId, byte[] nonce, byte[] associatedData)
            throws GeneralSecurityException {
        Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
        cipher.init(mode, key, new GCMParameterSpec(TAG_BITS, nonce));
        // The key id is authenticated too: relabelling a ciphertext cannot make another key try it.
        cipher.updateAAD(keyId.getBytes(StandardCharsets.US_ASCII));
        cipher.updateAAD(new byte[] {0});
        cipher.updateAAD(associatedData);
        return cipher;
    }

    private static String checkedId(String id) {
        if (id == null || !KEY_ID.matcher(id).matches()) {
            throw new IllegalArgumentException("key id '" + id + "' must be 1 to 32 characters of [A-Za-z0-9_-]");
        }
        return id;
    }

    private static byte[] decode(String id, String base64) {
        if (base64 == null || base64.isBlank()) {
            throw new IllegalArgumentException("key '" + id + "' is empty");
        }
        byte[] key;
        try {
            String trimmed = base64.trim();
            key = trimmed.indexOf('-') >= 0 || trimmed.indexOf('_') >= 0
                    ? Base64.getUrlDecoder().decode(trimmed)
                    : Base64.getDecoder().decode(trimmed);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("key '" + id + "' is not valid base64");
        }
        if (key.length != KEY_BYTES) {
            throw new IllegalArgumentException("key '" + id + "' must be a 256-bit AES key (32 bytes, base64: "
                    + "openssl rand -base64 32), but it is " + key.length + " bytes");
        }
        return key;
    }

    /** A sealed value: which key, the nonce, and the ciphertext with its 128-bit tag. */
    public record Sealed(String keyId, byte[] nonce, byte[] ciphertext) {
        public Sealed {
            Objects.requireNonNull(keyId, "keyId");
            Objects.requireNonNull(nonce, "nonce");
            Objects.requireNonNull(ciphertext, "ciphertext");
        }

        /**
         * As every sealed value is stored, after its own header: key id and nonce, each length-prefixed, then the
         * ciphertext to the end.
         */
        public void writeTo(DataOutputStream out) throws IOException {
            byte[] id = keyId.getBytes(StandardCharsets.US_ASCII);
            out.writeByte(id.length);
            out.write(id);
            out.writeByte(nonce.length);
            out.write(nonce);
            out.write(ciphertext);
        }

        /** What {@link #writeTo} wrote, the rest of {@code in}. */
        public static Sealed readFrom(DataInputStream in) throws IOException {
            String keyId = new String(exactly(in, in.readUnsignedByte()), StandardCharsets.US_ASCII);
            byte[] nonce = exactly(in, in.readUnsignedByte());
            return new Sealed(keyId, nonce, in.readAllBytes());
        }

        private static byte[] exactly(DataInputStream in, int length) throws IOException {
            byte[] bytes = in.readNBytes(length);
            if (bytes.length != length) {
                throw new EOFException("sealed value cut short");
            }
            return bytes;
        }
    }

    /** A sealed value that these keys cannot open; the message says why, without key material. */
    public static final class CannotOpen extends RuntimeException {
        CannotOpen(String message) {
            super(message);
        }
    }
}
