package dev.retrysafe.gateway.idempotency.fingerprint;

/**
 * Strict UTF-8 (RFC 3629): no overlong forms, no encoded surrogates, nothing above U+10FFFF, no truncated sequence.
 * Jackson's parser decodes some invalid sequences (an overlong four-byte form) into stray surrogates instead of
 * refusing them; such a body would get a canonical form that is not its own canonical form, and two different
 * invalid bodies could share one.
 */
final class Utf8 {
    private Utf8() {
    }

    /**
     * UTF-16 or UTF-32, as Jackson detects them (RFC 4627: a byte order mark, or a zero among the first bytes, since
     * JSON text starts with ASCII): those are decoded by the JDK, not checked here.
     */
    static boolean isWiderEncoding(byte[] bytes) {
        if (bytes.length < 2) {
            return false;
        }
        int first = bytes[0] & 0xff;
        int second = bytes[1] & 0xff;
        return first == 0 || second == 0 || (first == 0xfe && second == 0xff) || (first == 0xff && second == 0xfe);
    }

    static boolean isValid(byte[] bytes) {
        int i = 0;
        int length = bytes.length;
        while (i < length) {
            int b = bytes[i] & 0xff;
            if (b < 0x80) {
                i++;
                continue;
            }
            int extra;
            int min;
            int max = 0xbf;
            if (b >= 0xc2 && b <= 0xdf) {
                extra = 1;
                min = 0x80;
            } else if (b == 0xe0) {
                extra = 2;
                min = 0xa0; // below: overlong
            } else if (b == 0xed) {
                extra = 2;
                min = 0x80;
                max = 0x9f; // above: a surrogate
            } else if (b >= 0xe1 && b <= 0xef) {
                extra = 2;
                min = 0x80;
            } else if (b == 0xf0) {
                extra = 3;
                min = 0x90; // below: overlong
            } else if (b >= 0xf1 && b <= 0xf3) {
                extra = 3;
                min = 0x80;
            } else if (b == 0xf4) {
                extra = 3;
                min = 0x80;
                max = 0x8f; // above: beyond U+10FFFF
            } else {
                return false; // a continuation byte first, C0/C1 (overlong), or F5..FF
            }
            if (i + extra >= length) {
                return false; // truncated
            }
            int second = bytes[i + 1] & 0xff;
            if (second < min || second > max) {
                return false;
            }
            for (int k = 2; k <= extra; k++) {
                int next = bytes[i + k] & 0xff;
                if (next < 0x80 || next > 0xbf) {
                    return false;
                }
            }
            i += extra + 1;
        }
        return true;
    }
}
