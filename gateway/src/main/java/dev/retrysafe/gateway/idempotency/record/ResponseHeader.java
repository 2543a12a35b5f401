package dev.retrysafe.gateway.idempotency.record;

import java.util.Objects;

/** One response header line; a list of these keeps order and repeated names exactly as the upstream sent them. */
public record ResponseHeader(String name, String value) {
    public ResponseHeader {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, "value");
    }

    public boolean named(String other) {
        return name.equalsIgnoreCase(other);
    }
}
