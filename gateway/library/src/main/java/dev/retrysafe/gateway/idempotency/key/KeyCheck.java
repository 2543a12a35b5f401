package dev.retrysafe.gateway.idempotency.key;

import java.util.Objects;

/** The outcome of checking the idempotency header of one request. */
public sealed interface KeyCheck {

    record Valid(IdempotencyKey key) implements KeyCheck {
        public Valid {
            Objects.requireNonNull(key, "key");
        }
    }

    /** {@code message} names the header and the failed rule, and never contains the key itself. */
    record Rejected(String message) implements KeyCheck {
        public Rejected {
            Objects.requireNonNull(message, "message");
        }
    }
}
