package dev.retrysafe.gateway.idempotency.fingerprint;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

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
    private static final byte[] RAW_REQUEST_TAG = "raw-request-v1".getBytes(StandardCharsets.US_ASCII);

    private final Function<byte[], Optional<byte[]>> canonicalJson;
    private final Optional<RememberedFingerprints> remembered;

    /** A fingerprinter that puts every JSON body in canonical form, however often it has seen it. */
    public RequestFingerprinter(CanonicalJson canonicalJson) {
        this(canonicalJson, 0);
    }

    /**
     * @param rememberedFingerprints how many JSON requests' fingerprints to keep by the hash of their raw bytes, so
     *                               that a retry resending the same bytes skips the canonical form; 0 keeps none
     */
    public RequestFingerprinter(CanonicalJson canonicalJson, int rememberedFingerprints) {
        this(Objects.requireNonNull(canonicalJson, "canonicalJson")::canonicalize, rememberedFingerprints);
    }

    /** For tests that count how often a body is put in canonical form. */
    RequestFingerprinter(Function<byte[], Optional<byte[]>> canonicalJson, int rememberedFingerprints) {
        this.canonicalJson = canonicalJson;
        if (rememberedFingerprints < 0) {
            throw new IllegalArgumentException("remembered-fingerprints must not be negative, was "
                    + rememberedFingerprints);
        }
        this.remembered = rememberedFingerprints == 0 ? Optional.empty()
                : Optional.of(new RememberedFingerprints(rememberedFingerprints));
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
        if (remembered.isPresent() && isJson(contentType)) {
            // Everything the fingerprint depends on, the body as sent: equal raw digests mean equal fingerprints.
            byte[] rawDigest = new PartsDigest().add(RAW_REQUEST_TAG).add(method.toUpperCase(Locale.ROOT))
                    .add(path).add(canonicalQuery(rawQuery)).add(rawBody).digest();
            return remembered.get().computeIfAbsent(rawDigest, () -> computed(method, path, rawQuery, contentType, rawBody));
        }
        return computed(method, path, rawQuery, contentType, rawBody);
    }

    /** How many fingerprints are remembered now (0 when remembering is off). */
    public int rememberedCount() {
        return remembered.map(RememberedFingerprints::size).orElse(0);
    }

    private Fingerprint computed(String method, String path, String rawQuery, String contentType, byte[] rawBody) {
        Optional<byte[]> canonicalBody = isJson(contentType) ? canonicalJson.apply(rawBody) : Optional.empty();

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
