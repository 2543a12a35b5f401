package dev.retrysafe.gateway.idempotency.fingerprint;

import dev.retrysafe.gateway.idempotency.pointer.JsonPointer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Collection;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The rules a route's fingerprint is taken under, as one short text a record keeps: the canonical form's version,
 * the unordered arrays, the ignored pointers and the intent headers, each sorted, so that the order a route lists
 * them in changes nothing. Two routes (or two releases, or one route before and after a change) whose texts differ
 * may fingerprint one request differently; a record compared under other rules than its own falls back to the
 * strict fingerprint (see {@link Fingerprints#sameIntentAs}).
 *
 * @param id e.g. {@code c1;arrays=integrations,paymentMethods,sites;ignore=/sentAt}; {@code c1} for none
 */
public record FingerprintRules(String id) {
    /**
     * The version of everything a fingerprint is made of beside the route's rules: the canonical JSON (sorted
     * members, one escaping, numbers by value), the raw path, the query sorted by parameter name, the body and
     * header tags. A release that changes any of them bumps it, so its records are told apart from the last one's,
     * and bumps the stored format too: the scripts read a format-2 record without rules as one of {@code c1}.
     */
    public static final String CANONICAL_VERSION = "c1";
    public static final FingerprintRules NONE = new FingerprintRules(CANONICAL_VERSION);
    /** A longer text is kept as its digest: bounded in every record. */
    static final int MAX_ID_LENGTH = 256;

    public FingerprintRules {
        Objects.requireNonNull(id, "id");
    }

    /** @param intentHeaders lower case (as {@link RequestFingerprinter} keeps them) */
    public static FingerprintRules of(Collection<String> unorderedArrays, Collection<JsonPointer> ignored,
            Collection<String> intentHeaders) {
        StringBuilder id = new StringBuilder(CANONICAL_VERSION);
        part(id, "arrays", unorderedArrays);
        part(id, "ignore", ignored.stream().map(JsonPointer::toString).toList());
        part(id, "headers", intentHeaders);
        if (id.length() <= MAX_ID_LENGTH) {
            return new FingerprintRules(id.toString());
        }
        byte[] digest = new PartsDigest().add(id.toString()).digest();
        return new FingerprintRules(CANONICAL_VERSION + ";sha256="
                + Base64.getUrlEncoder().withoutPadding().encodeToString(digest));
    }

    /** No rule beside the canonical form: the route's fingerprint is the strict one. */
    public boolean none() {
        return id.equals(CANONICAL_VERSION);
    }

    private static void part(StringBuilder id, String name, Collection<String> values) {
        if (values.isEmpty()) {
            return;
        }
        id.append(';').append(name).append('=');
        String separator = "";
        for (String value : new TreeSet<>(values)) {
            id.append(separator).append(escaped(value));
            separator = ",";
        }
    }

    /** The separators, '%' and anything not printable ASCII percent-encoded: one text per rule set, one line. */
    private static String escaped(String value) {
        StringBuilder out = new StringBuilder(value.length());
        for (byte b : value.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if (c <= 0x20 || c >= 0x7f || c == '%' || c == ',' || c == ';' || c == '=') {
                out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            } else {
                out.append((char) c);
            }
        }
        return out.toString();
    }
}
