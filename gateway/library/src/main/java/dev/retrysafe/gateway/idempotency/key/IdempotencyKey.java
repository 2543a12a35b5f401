package dev.retrysafe.gateway.idempotency.key;

import java.util.Objects;

/**
 * A client-chosen key that names one write operation. Instances only hold values that passed the
 * character-set rule; length limits are configurable and checked by {@link KeyPolicy}.
 */
public record IdempotencyKey(String value) {

    public IdempotencyKey {
        Objects.requireNonNull(value, "value");
        // The message never echoes the value: it may be a secret-ish token or contain control characters.
        if (!hasOnlyAllowedCharacters(value)) {
            throw new IllegalArgumentException(
                    "An idempotency key must be non-empty and contain only letters, digits, '-' and '_'.");
        }
    }

    /** Only the length: keys must never reach logs. */
    @Override
    public String toString() {
        return "IdempotencyKey[length=" + value.length() + "]";
    }

    /** A single linear pass over ASCII ranges; no regex, so no backtracking on hostile input. */
    static boolean hasOnlyAllowedCharacters(String candidate) {
        if (candidate.isEmpty()) {
            return false;
        }
        for (int i = 0; i < candidate.length(); i++) {
            char c = candidate.charAt(i);
            boolean allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '_';
            if (!allowed) {
                return false;
            }
        }
        return true;
    }
}
