package dev.retrysafe.gateway.console;

import java.nio.charset.StandardCharsets;
import org.springframework.web.util.UriUtils;

/** The two ways text reaches the console's pages: as HTML text or attribute value, and as a URL path segment. */
final class Html {
    private Html() {
    }

    /**
     * Text safe inside an element or a quoted attribute: {@code & < > " '} as character references. Every string
     * that is not a literal of the page goes through here, stored values and request parameters alike.
     */
    static String esc(String text) {
        if (text == null) {
            return "";
        }
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> out.append(c);
            }
        }
        return out.toString();
    }

    /** A path segment (a scope hash from the URL may hold anything), percent-encoded, then escaped for HTML. */
    static String segment(String text) {
        return esc(UriUtils.encodePathSegment(text, StandardCharsets.UTF_8));
    }

    /** A query parameter value, percent-encoded, then escaped for HTML. */
    static String param(String text) {
        return esc(UriUtils.encodeQueryParam(text == null ? "" : text, StandardCharsets.UTF_8));
    }
}
