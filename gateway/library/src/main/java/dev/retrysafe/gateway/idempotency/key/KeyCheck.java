package dev.retrysafe.gateway.idempotency.key;

import java.util.Objects;

/** The outcome of checking the idempotency header of one request. */
public sealed interface KeyCheck {

    record Valid(IdempotencyKey key) implements KeyCheck {
        public Valid {
            Objects.requireNonNull(key, "key");
        }
    }

    /**
     * {@code message} names the header and the failed rule, and never contains the key itself. {@code fault} tells a
     * key not sent from one sent wrong: contracts may answer the two differently.
     */
    record Rejected(Fault fault, String message) implements KeyCheck {
        public Rejected {
            Objects.requireNonNull(fault, "fault");
            Objects.requireNonNull(message, "message");
        }

        /** No key at all: the header was not sent, or the body has no value where the key is taken from. */
        public static Rejected missing(String message) {
            return new Rejected(Fault.MISSING, message);
        }

        /** A key was sent but breaks a rule (empty, sent twice, too short or long, a character not allowed). */
        public static Rejected malformed(String message) {
            return new Rejected(Fault.MALFORMED, message);
        }
    }

    enum Fault {
        MISSING,
        MALFORMED
    }
}
