package dev.retrysafe.gateway.idempotency.record;

import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Which response headers may be stored for replay. Hop-by-hop headers describe one connection, not the result,
 * and {@code Content-Length} is recomputed from the stored body; the configured list (default {@code Set-Cookie})
 * must never be handed to a later caller.
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
        return headers.stream().filter(h -> isStorable(h.name())).collect(Collectors.toList());
    }
}
