package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.store.StoredResponseUnreadable;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * Compact binary form of a stored response, kept in one Redis hash field. A version byte leads: version 1 is the
 * plain form; version 2 is a version 1 blob sealed with AES-GCM, written only when encryption is on, so that
 * records written before encryption was turned on (or before an upgrade) stay readable. Bodies from
 * {@code compressAbove} bytes are stored deflated when that makes them smaller (before encryption, which leaves
 * nothing to compress): Redis memory is the cost that grows with retention.
 *
 * <p>Version 2: {@code [2][status u16][key id length u8][key id][nonce length u8][nonce][ciphertext + tag]}. The
 * status stays readable so that a record whose key was removed can still be answered for; it is authenticated
 * together with the scope hash, so a ciphertext copied to another record does not open there.
 */
final class StoredResponseCodec {
    private static final int VERSION = 1;
    private static final int VERSION_SEALED = 2;
    private static final int FLAG_BODY_OMITTED = 1;
    private static final int FLAG_BODY_DEFLATED = 2;
    private static final int NEVER = Integer.MAX_VALUE;

    private final int compressAbove;
    private final EncryptionKeys keys;

    /**
     * @param compressAbove stored bodies of at least this many bytes are deflated when that saves space
     * @param keys          seal new responses when enabled; open sealed ones written under any configured key
     */
    StoredResponseCodec(int compressAbove, EncryptionKeys keys) {
        this.compressAbove = compressAbove;
        this.keys = keys;
    }

    /** The stored form of the response of the record {@code scopeHash}. */
    byte[] encode(StoredResponse response, String scopeHash) {
        byte[] plain = encode(response, compressAbove);
        if (!keys.enabled()) {
            return plain;
        }
        EncryptionKeys.Sealed sealed = keys.seal(plain, associatedData(response.status(), scopeHash));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(sealed.ciphertext().length + 64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION_SEALED);
            out.writeShort(response.status());
            sealed.writeTo(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * Reads what {@link #encode(StoredResponse, String)} wrote for the same record, plain or sealed.
     *
     * @throws StoredResponseUnreadable when it is sealed and cannot be opened: key removed, or not this record's
     * @throws IllegalStateException    when the blob is damaged
     */
    StoredResponse decode(byte[] encoded, String scopeHash) {
        if (encoded.length == 0 || encoded[0] != VERSION_SEALED) {
            return decode(encoded);
        }
        try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(encoded))) {
            in.readUnsignedByte();
            int status = in.readUnsignedShort();
            EncryptionKeys.Sealed sealed = EncryptionKeys.Sealed.readFrom(in);
            byte[] plain;
            try {
                plain = keys.open(sealed, associatedData(status, scopeHash));
            } catch (EncryptionKeys.CannotOpen e) {
                throw new StoredResponseUnreadable(status, e.getMessage());
            }
            return decode(plain);
        } catch (IOException e) {
            throw new IllegalStateException("Corrupt stored response", e);
        }
    }

    private static byte[] associatedData(int status, String scopeHash) {
        return ("idempotency-response\n" + VERSION_SEALED + "\n" + status + "\n" + scopeHash)
                .getBytes(StandardCharsets.UTF_8);
    }

    static byte[] encode(StoredResponse response) {
        return encode(response, NEVER);
    }

    static byte[] encode(StoredResponse response, int compressAbove) {
        byte[] body = response.body();
        boolean deflated = false;
        if (body.length >= compressAbove) {
            byte[] smaller = deflate(body);
            if (smaller.length < body.length) {
                body = smaller;
                deflated = true;
            }
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(body.length + 256);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeByte((response.bodyOmitted() ? FLAG_BODY_OMITTED : 0) | (deflated ? FLAG_BODY_DEFLATED : 0));
            out.writeShort(response.status());
            out.writeInt(response.headers().size());
            for (ResponseHeader header : response.headers()) {
                writeString(out, header.name());
                writeString(out, header.value());
            }
            out.writeInt(body.length);
            out.write(body);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    static StoredResponse decode(byte[] encoded) {
        try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(encoded))) {
            int version = in.readUnsignedByte();
            if (version != VERSION) {
                throw new IllegalStateException("Unknown stored response format " + version);
            }
            int flags = in.readUnsignedByte();
            int status = in.readUnsignedShort();
            int headerCount = length(in, 8);
            List<ResponseHeader> headers = new ArrayList<>(headerCount);
            for (int i = 0; i < headerCount; i++) {
                headers.add(new ResponseHeader(readString(in), readString(in)));
            }
            byte[] body = new byte[length(in, 1)];
            in.readFully(body);
            if ((flags & FLAG_BODY_DEFLATED) != 0) {
                body = inflate(body);
            }
            return new StoredResponse(status, headers, body, (flags & FLAG_BODY_OMITTED) != 0);
        } catch (IOException e) {
            throw new IllegalStateException("Corrupt stored response", e);
        }
    }

    private static void writeString(DataOutputStream out, String value) throws IOException {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    private static byte[] deflate(byte[] body) {
        Deflater deflater = new Deflater(Deflater.BEST_SPEED);
        try {
            deflater.setInput(body);
            deflater.finish();
            ByteArrayOutputStream out = new ByteArrayOutputStream(body.length / 2 + 64);
            byte[] chunk = new byte[8192];
            while (!deflater.finished()) {
                out.write(chunk, 0, deflater.deflate(chunk));
            }
            return out.toByteArray();
        } finally {
            deflater.end();
        }
    }

    private static byte[] inflate(byte[] deflated) throws IOException {
        Inflater inflater = new Inflater();
        try {
            inflater.setInput(deflated);
            ByteArrayOutputStream out = new ByteArrayOutputStream(deflated.length * 3);
            byte[] chunk = new byte[8192];
            while (!inflater.finished()) {
                int n = inflater.inflate(chunk);
                if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new IOException("Truncated compressed body");
                }
                out.write(chunk, 0, n);
            }
            return out.toByteArray();
        } catch (DataFormatException e) {
            throw new IOException("Corrupt compressed body", e);
        } finally {
            inflater.end();
        }
    }

    /** A count or length read from the blob, checked against what is left so a damaged one cannot allocate wildly. */
    private static int length(DataInputStream in, int minBytesPerUnit) throws IOException {
        int value = in.readInt();
        if (value < 0 || (long) value * minBytesPerUnit > in.available()) {
            throw new IOException("Length " + value + " exceeds the " + in.available() + " bytes left");
        }
        return value;
    }

    private static String readString(DataInputStream in) throws IOException {
        byte[] bytes = new byte[length(in, 1)];
        in.readFully(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
