package dev.retrysafe.gateway.idempotency.fingerprint;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * Computes what "the same request" means for idempotency: the same method, the same path (it
 * carries the merchant id of an update), the same query parameters in any order of names, and a
 * body that is the same JSON value — or byte for byte the same when it is not JSON.
 * Thread-safe.
 */
public final class RequestFingerprinter {

    private static final byte[] JSON_BODY = "json".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] RAW_BODY = "raw".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NO_BYTES = new byte[0];
    private static final Comparator<String> BY_PARAMETER_NAME = Comparator.comparing(RequestFingerprinter::parameterName);

    private final CanonicalJson canonicalJson;

    public RequestFingerprinter(CanonicalJson canonicalJson) {
        this.canonicalJson = Objects.requireNonNull(canonicalJson, "canonicalJson");
    }

    /**
     * @param method      HTTP method, any case
     * @param path        the raw path as received
     * @param rawQuery    the raw query string without '?'; {@code null} or empty when there is none
     * @param contentType the Content-Type header value, or {@code null}
     * @param body        the request body, or {@code null} when there is none
     */
    public Fingerprint fingerprint(String method, String path, String rawQuery, String contentType, byte[] body) {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(path, "path");
        byte[] rawBody = body == null ? NO_BYTES : body;
        Optional<byte[]> canonicalBody = isJson(contentType) ? canonicalJson.canonicalize(rawBody) : Optional.empty();

        // A fresh digest per call: digests are stateful and not thread-safe.
        PartsDigest sha256 = new PartsDigest();
        // Every part is length-prefixed, so no part can bleed into the next (path "/a" + query "b"
        // never equals path "/ab" + empty query).
        sha256.add(method.toUpperCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8));
        sha256.add(path.getBytes(StandardCharsets.UTF_8));
        sha256.add(canonicalQuery(rawQuery).getBytes(StandardCharsets.UTF_8));
        // The tag keeps a raw body from ever colliding with a canonical JSON body of the same bytes.
        sha256.add(canonicalBody.isPresent() ? JSON_BODY : RAW_BODY);
        sha256.add(canonicalBody.orElse(rawBody));
        return Fingerprint.ofDigest(sha256.digest());
    }

    /**
     * Parameters stay raw (no decoding) and are stably sorted by name: clients may build the query
     * from a map in any order, while repeated names keep their relative order because it may matter.
     */
    static String canonicalQuery(String rawQuery) {
        if (rawQuery == null || rawQuery.isEmpty()) {
            return "";
        }
        List<String> parameters = new ArrayList<>(Arrays.asList(rawQuery.split("&", -1)));
        parameters.sort(BY_PARAMETER_NAME); // List.sort is stable
        return String.join("&", parameters);
    }

    private static String parameterName(String parameter) {
        int equals = parameter.indexOf('=');
        return equals < 0 ? parameter : parameter.substring(0, equals);
    }

    /** application/json or any +json subtype; parameters such as charset do not matter. */
    static boolean isJson(String contentType) {
        if (contentType == null) {
            return false;
        }
        int semicolon = contentType.indexOf(';');
        String mediaType = (semicolon < 0 ? contentType : contentType.substring(0, semicolon))
                .trim().toLowerCase(Locale.ROOT);
        int slash = mediaType.indexOf('/');
        if (slash <= 0) {
            return false;
        }
        String subtype = mediaType.substring(slash + 1);
        return mediaType.equals("application/json") || (subtype.endsWith("+json") && subtype.length() > "+json".length());
    }
}
