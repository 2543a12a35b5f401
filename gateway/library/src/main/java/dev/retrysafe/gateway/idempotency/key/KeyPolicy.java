package dev.retrysafe.gateway.idempotency.key;

import java.util.List;
import java.util.Objects;

/**
 * Decides whether the values of the idempotency header form an acceptable key.
 * Rules are applied in a fixed order so that a client always learns the first thing to fix.
 *
 * @param quotedString whether the key may come as an RFC 8941 string, in double quotes, as
 *                     draft-ietf-httpapi-idempotency-key-header writes it: the key is then what is between them
 *                     ({@code "abc"} and {@code abc} are one key), and the rules apply to it
 */
public record KeyPolicy(int minLength, int maxLength, boolean quotedString) {

    public static final String DEFAULT_HEADER_NAME = "Idempotency-Key";

    /** 16 rejects trivially guessable keys; 64 fits a UUID, hex of 32 bytes, and similar formats. */
    public static final KeyPolicy DEFAULT = new KeyPolicy(16, 64);

    public KeyPolicy(int minLength, int maxLength) {
        this(minLength, maxLength, false);
    }

    public KeyPolicy {
        if (minLength < 1) {
            throw new IllegalArgumentException("key-min-length must be at least 1, was " + minLength);
        }
        if (maxLength < minLength) {
            throw new IllegalArgumentException(
                    "key-min-length (" + minLength + ") must not be more than key-max-length (" + maxLength + ")");
        }
    }

    /**
     * @param headerName   the header as clients know it, used in messages
     * @param headerValues every value received for that header; {@code null} or empty means absent
     */
    public KeyCheck check(String headerName, List<String> headerValues) {
        Objects.requireNonNull(headerName, "headerName");
        if (headerValues == null || headerValues.isEmpty()) {
            return KeyCheck.Rejected.missing(rule(headerName, "is required."));
        }
        // Two values could be two different keys; picking one would be a guess.
        if (headerValues.size() > 1) {
            return reject(headerName, "must be sent only once.");
        }
        String value = headerValues.get(0);
        if (quotedString && value != null && value.length() >= 2 && value.startsWith("\"")
                && value.endsWith("\"")) {
            // An escape inside (\" or \\) leaves a character the key rules refuse: nothing to unescape.
            value = value.substring(1, value.length() - 1);
        }
        if (value == null || value.isBlank()) {
            return reject(headerName, "must not be empty.");
        }
        if (value.length() < minLength) {
            return reject(headerName, "must be at least " + minLength + " characters long.");
        }
        if (value.length() > maxLength) {
            return reject(headerName, "must be at most " + maxLength + " characters long.");
        }
        // No trimming: " key " and "key" would otherwise silently become the same operation.
        if (!IdempotencyKey.hasOnlyAllowedCharacters(value)) {
            return reject(headerName, "may only contain letters, digits, '-' and '_'.");
        }
        return new KeyCheck.Valid(new IdempotencyKey(value));
    }

    private static KeyCheck reject(String headerName, String rule) {
        return KeyCheck.Rejected.malformed(rule(headerName, rule));
    }

    private static String rule(String headerName, String rule) {
        return "The " + headerName + " header " + rule;
    }
}
