package dev.retrysafe.gateway.idempotency.fingerprint;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * Computes what "the same request" means for idempotency: the same method, the same path (it
 * carries the merchant id of an update), the same query parameters in any order of names, and a
 * body that is the same JSON value — or byte for byte the same when it is not JSON — and, when the route names
 * them, the same values of the request headers that are part of the intent. Thread-safe.
 */
public final class RequestFingerprinter {

    private static final byte[] JSON_BODY = "json".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] RAW_BODY = "raw".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NO_BYTES = new byte[0];
    private static final Comparator<String> BY_PARAMETER_NAME = Comparator.comparing(RequestFingerprinter::parameterName);
    private static final byte[] RAW_REQUEST_TAG = "raw-request-v1".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] INTENT_HEADERS_TAG = "headers-v1".getBytes(StandardCharsets.US_ASCII);
    private static final Function<String, List<String>> NO_HEADERS = name -> List.of();

    /** The canonical form with no route rule, for the strict fingerprint. */
    private static final CanonicalJson STRICT_JSON = new CanonicalJson(Set.of(), List.of());

    private final Function<byte[], Optional<byte[]>> canonicalJson;
    private final Optional<RememberedFingerprints> remembered;
    private final List<String> intentHeaders;
    private final FingerprintRules rules;

    /**
     * @param rememberedFingerprints how many JSON requests' fingerprints to keep by the hash of their raw bytes, so
     *                               that a retry resending the same bytes skips the canonical form; 0 keeps none
     * @param intentHeaders request headers whose values are part of the fingerprint, by name in any case; none
     *                      leaves the fingerprint exactly as without this argument
     */
    public RequestFingerprinter(CanonicalJson canonicalJson, int rememberedFingerprints, List<String> intentHeaders) {
        this.canonicalJson = Objects.requireNonNull(canonicalJson, "canonicalJson")::canonicalize;
        this.intentHeaders = headerNames(intentHeaders);
        this.rules = FingerprintRules.of(canonicalJson.unorderedArrays(), canonicalJson.ignored(), this.intentHeaders);
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
        return fingerprints(method, path, rawQuery, contentType, body, NO_HEADERS).fingerprint();
    }

    /** The fingerprint under the route's rules: {@link #fingerprints}' first. */
    public Fingerprint fingerprint(String method, String path, String rawQuery, String contentType, byte[] body,
            Function<String, List<String>> headerValues) {
        return fingerprints(method, path, rawQuery, contentType, body, headerValues).fingerprint();
    }

    /** The rules this route's fingerprints are taken under. */
    public FingerprintRules rules() {
        return rules;
    }

    /**
     * The request's fingerprint under the route's rules, its strict fingerprint (the same as the first on a route
     * with no rules, not computed twice) and the rules' identity: what a record keeps.
     *
     * @param headerValues every value of a request header, by name in any case, as sent (one per header line, in
     *                     order); empty when it was not sent. Asked only for the route's intent headers.
     */
    public Fingerprints fingerprints(String method, String path, String rawQuery, String contentType, byte[] body,
            Function<String, List<String>> headerValues) {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(path, "path");
        byte[] rawBody = body == null ? NO_BYTES : body;
        List<byte[]> headerParts = intentHeaderParts(headerValues);
        if (remembered.isPresent() && isJson(contentType)) {
            // Everything the fingerprint depends on, the body as sent: equal raw digests mean equal fingerprints.
            PartsDigest raw = new PartsDigest().add(RAW_REQUEST_TAG).add(method.toUpperCase(Locale.ROOT))
                    .add(path).add(canonicalQuery(rawQuery)).add(rawBody);
            headerParts.forEach(raw::add);
            return remembered.get().computeIfAbsent(raw.digest(),
                    () -> computed(method, path, rawQuery, contentType, rawBody, headerParts));
        }
        return computed(method, path, rawQuery, contentType, rawBody, headerParts);
    }

    /** How many fingerprints are remembered now (0 when remembering is off). */
    public int rememberedCount() {
        return remembered.map(RememberedFingerprints::size).orElse(0);
    }

    /**
     * Nothing at all without intent headers, so that every fingerprint stored before they existed stays valid. With
     * them: each name, its number of values and each value as sent, so that a header not sent (0 values) differs
     * from one sent empty, and "a, b" in one line from "a" and "b" in two.
     */
    private List<byte[]> intentHeaderParts(Function<String, List<String>> headerValues) {
        if (intentHeaders.isEmpty()) {
            return List.of();
        }
        List<byte[]> parts = new ArrayList<>();
        parts.add(INTENT_HEADERS_TAG);
        for (String name : intentHeaders) {
            List<String> values = Objects.requireNonNullElse(headerValues.apply(name), List.of());
            parts.add(name.getBytes(StandardCharsets.UTF_8));
            parts.add(Integer.toString(values.size()).getBytes(StandardCharsets.US_ASCII));
            for (String value : values) {
                parts.add(value.getBytes(StandardCharsets.UTF_8));
            }
        }
        return parts;
    }

    /** Lower case, sorted, each once: the order a route lists them in, or their case, changes nothing. */
    private static List<String> headerNames(List<String> names) {
        TreeSet<String> sorted = new TreeSet<>();
        for (String name : Objects.requireNonNull(names, "intentHeaders")) {
            String trimmed = name == null ? "" : name.trim();
            if (!isToken(trimmed)) {
                throw new IllegalArgumentException("fingerprint-headers must be header names, was '" + name + "'");
            }
            sorted.add(trimmed.toLowerCase(Locale.ROOT));
        }
        return List.copyOf(sorted);
    }

    /** An HTTP field name (RFC 9110 token): what a header line can carry before its colon. */
    private static boolean isToken(String name) {
        if (name.isEmpty()) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
            if (!allowed) {
                return false;
            }
        }
        return true;
    }

    private Fingerprints computed(String method, String path, String rawQuery, String contentType, byte[] rawBody,
            List<byte[]> headerParts) {
        boolean json = isJson(contentType);
        Fingerprint fingerprint = digest(method, path, rawQuery, rawBody,
                json ? canonicalJson.apply(rawBody) : Optional.empty(), headerParts);
        if (rules.none()) {
            return new Fingerprints(fingerprint, fingerprint, rules.id());
        }
        Fingerprint strict = digest(method, path, rawQuery, rawBody,
                json ? STRICT_JSON.canonicalize(rawBody) : Optional.empty(), List.of());
        return new Fingerprints(fingerprint, strict, rules.id());
    }

    private static Fingerprint digest(String method, String path, String rawQuery, byte[] rawBody,
            Optional<byte[]> canonicalBody, List<byte[]> headerParts) {
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
        headerParts.forEach(sha256::add);
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
