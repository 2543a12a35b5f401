package dev.retrysafe.gateway.idempotency.wire;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Which request framings the gateway accepts. RFC 9112 section 6.3: a request whose Transfer-Encoding does not end
 * in {@code chunked} has no reliable length and must be refused; a coding the server does not decode must not be
 * passed on as if it were plain. The gateway decodes exactly one coding, {@code chunked}, so that is the only value
 * accepted; anything else ({@code xchunked}, {@code gzip, chunked}, {@code chunked;q=1}, a quoted value) is refused.
 */
public final class TransferCoding {
    private TransferCoding() {
    }

    /**
     * @param values every Transfer-Encoding field line of the request, as received (none: no Transfer-Encoding)
     * @return why the request's framing is refused, or empty when it is acceptable
     */
    public static Optional<String> problem(List<String> values) {
        if (values.isEmpty()) {
            return Optional.empty();
        }
        List<String> codings = new ArrayList<>();
        for (String value : values) {
            for (String coding : value.split(",", -1)) {
                codings.add(coding.strip());
            }
        }
        if (codings.size() == 1 && codings.get(0).toLowerCase(Locale.ROOT).equals("chunked")) {
            return Optional.empty();
        }
        return Optional.of("The Transfer-Encoding header must be exactly \"chunked\"; the request was not processed.");
    }
}
