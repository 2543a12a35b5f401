package dev.retrysafe.gateway.idempotency.process;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;
import java.util.Optional;
import java.util.zip.GZIPInputStream;
import java.util.zip.InflaterInputStream;

/**
 * A response body as the upstream sent it, possibly compressed ({@code Content-Encoding: gzip} or {@code deflate}):
 * the gateway stores and replays it as is, but must read the plain JSON to find a process id or status.
 */
final class EncodedBody {
    private static final int MAX_DECODED_BYTES = 1024 * 1024;

    private EncodedBody() {
    }

    /** The plain bytes, or empty when the encoding is unknown, broken or decodes to more than 1 MiB. */
    static Optional<byte[]> decode(String contentEncoding, byte[] body) {
        String encoding = contentEncoding == null ? "identity" : contentEncoding.trim().toLowerCase(Locale.ROOT);
        try {
            return switch (encoding) {
                case "", "identity" -> Optional.of(body);
                case "gzip", "x-gzip" -> bounded(new GZIPInputStream(new ByteArrayInputStream(body)));
                case "deflate" -> bounded(new InflaterInputStream(new ByteArrayInputStream(body)));
                default -> Optional.empty();
            };
        } catch (IOException broken) {
            return Optional.empty();
        }
    }

    private static Optional<byte[]> bounded(InputStream in) throws IOException {
        try (in) {
            byte[] decoded = in.readNBytes(MAX_DECODED_BYTES + 1);
            return decoded.length > MAX_DECODED_BYTES ? Optional.empty() : Optional.of(decoded);
        }
    }
}
