package dev.retrysafe.gateway.idempotency.store;

import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Proves which request holds a reservation. Storing or releasing a record checks it atomically, so a late or
 * foreign writer (a request whose lease lapsed, another instance) can never overwrite or free what it does not own.
 * Uniqueness is all that matters here, not secrecy: 128 random bits.
 */
public record OwnerToken(String value) {
    public static OwnerToken random() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        HexFormat hex = HexFormat.of();
        return new OwnerToken(hex.toHexDigits(random.nextLong()) + hex.toHexDigits(random.nextLong()));
    }
}
