package dev.retrysafe.gateway.idempotency.operator;

/**
 * Text from outside (an operator's reason, a path segment) as it may appear inside a log line: on one line, so that
 * it cannot start a line of its own that looks like the gateway's. Line breaks, tabs, other control and format
 * characters (bidi overrides) are written as escapes, and a backslash as two, so an escape in the text itself
 * cannot pass for one of ours. (Here rather than in {@code observability}, which already depends on this package.)
 */
public final class LogText {
    private LogText() {
    }

    public static String oneLine(String text) {
        StringBuilder out = new StringBuilder(text.length());
        text.codePoints().forEach(c -> {
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (!isPrintable(c)) {
                        out.append(String.format("\\u%04x", c));
                    } else {
                        out.appendCodePoint(c);
                    }
                }
            }
        });
        return out.toString();
    }

    /** One line without control or format characters: nothing in it needs an escape but a backslash. */
    public static boolean isOnePrintableLine(String text) {
        return text.codePoints().allMatch(LogText::isPrintable);
    }

    private static boolean isPrintable(int c) {
        return switch (Character.getType(c)) {
            case Character.CONTROL, Character.FORMAT, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                    Character.SURROGATE -> false;
            default -> true;
        };
    }
}
