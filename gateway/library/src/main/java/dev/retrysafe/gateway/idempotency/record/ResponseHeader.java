package dev.retrysafe.gateway.idempotency.record;

import java.util.Objects;

/** One response header line; a list of these keeps order and repeated names exactly as the upstream sent them. */
public record ResponseHeader(String name, String value) {
    private static final String TOKEN_SYMBOLS = "!#$%&'*+-.^_`|~";

    public ResponseHeader {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, "value");
    }

    public boolean named(String other) {
        return name.equalsIgnoreCase(other);
    }

    /**
     * Whether an HTTP/1.1 message can carry this header as it is (RFC 9110, 5.1 and 5.5): the name a token, the
     * value visible characters, spaces and tabs (no CR, LF, NUL or other control character), not starting with
     * whitespace, and nothing beyond one byte per character. Netty refuses anything else while the response is
     * being written, so an unchecked stored header would turn every replay into a 5xx.
     */
    public boolean isWritable() {
        return hasTokenName() && isFieldValue(value);
    }

    public boolean hasTokenName() {
        return isToken(name);
    }

    private static boolean isToken(String text) {
        if (text.isEmpty()) {
            return false;
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean alphanumeric = c < 0x80 && Character.isLetterOrDigit(c);
            if (!alphanumeric && TOKEN_SYMBOLS.indexOf(c) < 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean isFieldValue(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean whitespace = c == ' ' || c == '\t';
            boolean visible = (c > 0x20 && c < 0x7F) || (c >= 0x80 && c <= 0xFF);
            if (!(visible || (whitespace && i > 0))) {
                return false;
            }
        }
        return true;
    }
}
