package dev.retrysafe.gateway.idempotency.reconcile;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * How a route looks up an UNCERTAIN record at its upstream: the lookup's path and query, the earliest its answer is
 * trusted, and which statuses say found and not found (anything else: asked again later).
 *
 * @param after          empty: twice the route's response timeout (or in-flight lease without one), decided per request
 * @param headers        sent with every lookup (credentials a backend wants: {@code reconcile-headers}); never logged
 * @param forwardHeaders headers of the original request sent with its lookup ({@code reconcile-forward-headers}):
 *                       kept with the record's lookup values (sealed when encryption is on) until it settles
 */
public record Reconciliation(LookupTemplate template, Optional<Duration> after, int foundStatus,
        int notFoundStatus, Map<String, String> headers, List<String> forwardHeaders) {
    /** Where a forwarded header's value is kept among the record's lookup values (no placeholder name starts so). */
    public static final String FORWARDED = "header:";
    /** An HTTP token (RFC 9110): what a header name may be. */
    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+\\-.^_`|~0-9A-Za-z]+");

    public Reconciliation {
        headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
        forwardHeaders = List.copyOf(forwardHeaders);
        headers.forEach((name, value) -> {
            requireToken("reconcile-headers", name);
            if (value.chars().anyMatch(c -> c == '\r' || c == '\n' || c == 0)) {
                throw new IllegalArgumentException("reconcile-headers: the value of " + name
                        + " must be one line");
            }
        });
        forwardHeaders.forEach(name -> requireToken("reconcile-forward-headers", name));
        after.ifPresent(delay -> {
            if (delay.isNegative() || delay.isZero()) {
                throw new IllegalArgumentException("reconcile-after must be positive, was " + delay);
            }
        });
        if (foundStatus < 200 || foundStatus > 299) {
            throw new IllegalArgumentException("reconcile-found must be a 2xx status, was " + foundStatus);
        }
        if (notFoundStatus < 400 || notFoundStatus > 499) {
            throw new IllegalArgumentException("reconcile-not-found must be a 4xx status, was " + notFoundStatus);
        }
    }

    /**
     * {@code reconcile-headers} as written on a route, each {@code Name: value} (the value may come from a property
     * placeholder, {@code ${BACKEND_TOKEN}}, resolved when the route is bound).
     */
    public static Map<String, String> parseHeaders(List<String> lines) {
        Map<String, String> headers = new LinkedHashMap<>();
        for (String line : lines) {
            int colon = line.indexOf(':');
            if (colon <= 0) {
                // The line itself may be a credential: only its shape is named.
                throw new IllegalArgumentException("reconcile-headers entries are 'Name: value', one had no name "
                        + "before a ':'");
            }
            headers.put(line.substring(0, colon).trim(), line.substring(colon + 1).trim());
        }
        return headers;
    }

    private static void requireToken(String arg, String name) {
        if (!TOKEN.matcher(name).matches()) {
            throw new IllegalArgumentException(arg + ": '" + name + "' is not a header name");
        }
    }

    /** Header values are credentials: never in a log line or an error. */
    @Override
    public String toString() {
        return "Reconciliation[template=" + template + ", after=" + after + ", foundStatus=" + foundStatus
                + ", notFoundStatus=" + notFoundStatus + ", headers=" + headers.keySet() + " (values masked)"
                + ", forwardHeaders=" + forwardHeaders + "]";
    }
}
