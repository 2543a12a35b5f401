package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The stored form of a record's lookup values (the field {@code lookup}): name and value pairs, sealed with AES-GCM
 * when encryption is on, bound to their record as stored responses are ({@link StoredResponseCodec}). They are
 * parts of a request body, as sensitive as the response.
 */
final class LookupValuesCodec {
    private static final int VERSION = 1;
    private static final int VERSION_SEALED = 2;

    private final EncryptionKeys keys;

    LookupValuesCodec(EncryptionKeys keys) {
        this.keys = keys;
    }

    byte[] encode(Map<String, String> values, String scopeHash) {
        byte[] plain = plain(values);
        if (!keys.enabled()) {
            return plain;
        }
        EncryptionKeys.Sealed sealed = keys.seal(plain, associatedData(scopeHash));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(sealed.ciphertext().length + 64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION_SEALED);
            sealed.writeTo(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** The values, or empty when they cannot be read (sealed under a key no longer configured, or damaged). */
    Optional<Map<String, String>> decode(byte[] encoded, String scopeHash) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(encoded))) {
            int version = in.readUnsignedByte();
            if (version == VERSION) {
                return Optional.of(values(encoded));
            }
            if (version != VERSION_SEALED) {
                return Optional.empty();
            }
            return Optional.of(values(keys.open(EncryptionKeys.Sealed.readFrom(in), associatedData(scopeHash))));
        } catch (IOException | EncryptionKeys.CannotOpen | IllegalStateException e) {
            return Optional.empty();
        }
    }

    private static byte[] plain(Map<String, String> values) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeInt(values.size());
            for (Map.Entry<String, String> value : values.entrySet()) {
                write(out, value.getKey());
                write(out, value.getValue());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    private static Map<String, String> values(byte[] plain) throws IOException {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(plain))) {
            if (in.readUnsignedByte() != VERSION) {
                throw new IllegalStateException("not lookup values");
            }
            int count = in.readInt();
            Map<String, String> values = new LinkedHashMap<>();
            for (int i = 0; i < count; i++) {
                values.put(read(in), read(in));
            }
            return values;
        }
    }

    private static void write(DataOutputStream out, String text) throws IOException {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    private static String read(DataInputStream in) throws IOException {
        int length = in.readInt();
        if (length < 0 || length > in.available()) {
            throw new IllegalStateException("damaged lookup values");
        }
        return new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    private static byte[] associatedData(String scopeHash) {
        return ("idempotency-lookup\n" + VERSION_SEALED + "\n" + scopeHash).getBytes(StandardCharsets.UTF_8);
    }
}
