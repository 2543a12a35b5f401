package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Compact binary form of a stored response, kept in one Redis hash field. A version byte leads so that a later
 * format (compression, encryption) can read records written by this one.
 */
final class StoredResponseCodec {
    private static final int VERSION = 1;
    private static final int FLAG_BODY_OMITTED = 1;

    private StoredResponseCodec() {
    }

    static byte[] encode(StoredResponse response) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(response.body().length + 256);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeByte(response.bodyOmitted() ? FLAG_BODY_OMITTED : 0);
            out.writeShort(response.status());
            out.writeInt(response.headers().size());
            for (ResponseHeader header : response.headers()) {
                writeString(out, header.name());
                writeString(out, header.value());
            }
            out.writeInt(response.body().length);
            out.write(response.body());
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
