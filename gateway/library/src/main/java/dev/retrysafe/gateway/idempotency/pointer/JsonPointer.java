package dev.retrysafe.gateway.idempotency.pointer;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * An RFC 6901 pointer into a JSON document, such as {@code /meta/*}{@code /requestId}: each segment names an object
 * member ({@code ~0} for {@code ~}, {@code ~1} for {@code /}) or an array index, and a segment that is exactly
 * {@code *} matches every member and every element. A member literally named {@code *} cannot be named. The empty
 * pointer (the whole document) is refused: no route setting means it.
 */
public final class JsonPointer {
    private final String text;
    private final List<Segment> segments;

    private JsonPointer(String text, List<Segment> segments) {
        this.text = text;
        this.segments = List.copyOf(segments);
    }

    /** @throws IllegalArgumentException saying what is wrong with {@code text}, which it quotes */
    public static JsonPointer parse(String text) {
        Objects.requireNonNull(text, "text");
        if (text.isEmpty() || text.charAt(0) != '/') {
            throw new IllegalArgumentException("'" + text + "' is not a JSON pointer: it must start with '/'");
        }
        List<Segment> segments = new ArrayList<>();
        for (String raw : text.substring(1).split("/", -1)) {
            segments.add(raw.equals("*") ? Segment.ANY : new Segment(unescaped(text, raw), false));
        }
        return new JsonPointer(text, segments);
    }

    private static String unescaped(String text, String raw) {
        StringBuilder name = new StringBuilder(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c != '~') {
                name.append(c);
                continue;
            }
            char next = i + 1 < raw.length() ? raw.charAt(i + 1) : 0;
            if (next != '0' && next != '1') {
                throw new IllegalArgumentException("'" + text + "' is not a JSON pointer: '~' must be followed by "
                        + "0 (for '~') or 1 (for '/')");
            }
            name.append(next == '0' ? '~' : '/');
            i++;
        }
        return name.toString();
    }

    /** How many segments: the depth of what it names, 1 for a member of the top-level value. */
    public int depth() {
        return segments.size();
    }

    /**
     * Whether the segment at {@code depth} (0 for the first) matches a member's name, or an array element's index
     * written in decimal ("0", "12"): "01" and "-" name no element, as in RFC 6901.
     */
    public boolean matchesAt(int depth, String nameOrIndex) {
        Segment segment = segments.get(depth);
        return segment.any() || segment.name().equals(nameOrIndex);
    }

    public boolean hasWildcard() {
        return segments.stream().anyMatch(Segment::any);
    }

    /** As written in the route's settings (escapes and all): what messages quote. */
    @Override
    public String toString() {
        return text;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof JsonPointer other && text.equals(other.text);
    }

    @Override
    public int hashCode() {
        return text.hashCode();
    }

    private record Segment(String name, boolean any) {
        static final Segment ANY = new Segment("*", true);
    }
}
