package dev.retrysafe.gateway.idempotency.store;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a reconciling route keeps with a record so that any gateway instance can later ask the upstream about it:
 * the values its lookup template names (the forwarded key, fields of the original body), and how long after the
 * record turned UNCERTAIN the upstream's answer can be trusted. Encrypted in the store when encryption is on.
 *
 * @param values by template name ({@code key}, {@code body:/taxId}), each as the template will encode it
 * @param after  the earliest a lookup is made after the record turned UNCERTAIN
 */
public record LookupValues(Map<String, String> values, Duration after) {
    public LookupValues {
        values = java.util.Collections.unmodifiableMap(new TreeMap<>(values));
        if (after.isNegative() || after.isZero()) {
            throw new IllegalArgumentException("a lookup's delay must be positive, was " + after);
        }
    }
}
