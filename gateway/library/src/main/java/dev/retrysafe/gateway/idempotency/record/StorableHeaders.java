package dev.retrysafe.gateway.idempotency.record;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Which response headers may be stored for replay. Hop-by-hop headers describe one connection, not the result:
 * the fixed ones and any the upstream names in its {@code Connection} header (RFC 9110, 7.6.1). Spring Cloud
 * Gateway drops them too, but only as configured; the store must not depend on that. {@code Content-Length} is
 * recomputed from the stored body; the configured list (default {@code Set-Cookie, Set-Cookie2}) must never be
 * handed to a later caller.
 */
public final class StorableHeaders {
    static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade");

    private final Set<String> excluded;

    public StorableHeaders(Set<String> neverStored) {
        Set<String> all = new TreeSet<>(HOP_BY_HOP);
        all.add("content-length");
        neverStored.forEach(name -> all.add(name.toLowerCase(Locale.ROOT)));
        this.excluded = Set.copyOf(all);
    }

    public boolean isStorable(String name) {
        return !excluded.contains(name.toLowerCase(Locale.ROOT));
    }

    public List<ResponseHeader> filter(List<ResponseHeader> headers) {
        Set<String> namedInConnection = headers.stream().filter(h -> h.named("Connection"))
                .flatMap(h -> Arrays.stream(h.value().split(",")))
                .map(token -> token.trim().toLowerCase(Locale.ROOT))
                .collect(Collectors.toSet());
        return headers.stream()
                .filter(h -> isStorable(h.name()) && !namedInConnection.contains(h.name().toLowerCase(Locale.ROOT)))
                .collect(Collectors.toList());
    }
}
