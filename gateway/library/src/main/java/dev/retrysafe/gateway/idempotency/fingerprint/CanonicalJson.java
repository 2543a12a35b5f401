package dev.retrysafe.gateway.idempotency.fingerprint;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

import dev.retrysafe.gateway.idempotency.pointer.JsonPointer;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.core.json.JsonFactory;

/**
 * Rewrites a JSON document into one fixed textual form, so that bodies that mean the same thing
 * hash the same: sorted object keys, no insignificant whitespace, one string escaping, numbers
 * compared by value, the arrays named in {@code unorderedArrays} sorted, and the values the {@code ignored} pointers
 * name left out (as if they had never been sent: volatile metadata that is not part of the request's intent).
 *
 * <p>Parsing, sorting and writing use explicit stacks instead of recursion; Jackson's default
 * {@code StreamReadConstraints} (nesting depth, number and string length) bound the input.
 * Thread-safe: the factory is immutable and every call uses its own parser.
 */
public final class CanonicalJson {

    // Duplicate keys are ambiguous: backends disagree on which value wins, so such a body is not
    // canonicalisable and is compared byte for byte instead.
    private static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private static final Comparator<Member> BY_NAME = Comparator.comparing(Member::name);

    private static final int SORT_PREFIX_CHARS = 64;

    private static final Comparator<SortableElement> BY_CANONICAL_TEXT = Comparator
            .comparing(SortableElement::prefix)
            .thenComparing(SortableElement::node, CanonicalJson::compareCanonical);

    private final Set<String> unorderedArrays;
    private final List<JsonPointer> ignored;

    /**
     * @param unorderedArrays names of fields whose arrays are sets: their order carries no meaning
     * @param ignored values left out of the canonical form; an element left out of an array shortens it, and the
     *                indexes the other pointers name are those of the body as sent
     */
    public CanonicalJson(Set<String> unorderedArrays, List<JsonPointer> ignored) {
        this.unorderedArrays = Set.copyOf(Objects.requireNonNull(unorderedArrays, "unorderedArrays"));
        this.ignored = List.copyOf(Objects.requireNonNull(ignored, "ignored"));
    }

    /** The fields whose arrays are sorted, as given. */
    public Set<String> unorderedArrays() {
        return unorderedArrays;
    }

    /** The values left out, as given. */
    public List<JsonPointer> ignored() {
        return ignored;
    }

    /**
     * @return the canonical UTF-8 bytes, or empty when {@code json} is not exactly one valid JSON
     *         value in valid UTF-8 within Jackson's default limits (or repeats a key within an object)
     */
    public Optional<byte[]> canonicalize(byte[] json) {
        Objects.requireNonNull(json, "json");
        if (!Utf8.isWiderEncoding(json) && !Utf8.isValid(json)) {
            return Optional.empty(); // not text Jackson decodes faithfully: compared byte for byte
        }
        try (JsonParser parser = FACTORY.createParser(ObjectReadContext.empty(), json)) {
            Node root = parse(parser);
            if (root == null || parser.nextToken() != null) {
                return Optional.empty(); // no value at all, or something after the value
            }
            StringBuilder out = new StringBuilder(json.length);
            new CanonicalText(root).appendTo(out);
            return Optional.of(out.toString().getBytes(StandardCharsets.UTF_8));
        } catch (JacksonException | NumberFormatException | ArithmeticException notCanonicalisable) {
            // Malformed, ambiguous, or beyond the limits: the caller falls back to the raw bytes.
            return Optional.empty();
        }
    }

    /**
     * Reads exactly one value into a tree whose objects and unordered arrays are already sorted, leaving out the
     * ignored values. Each open container carries the ignore pointers whose segments so far match its path, so a
     * route that ignores nothing does no matching at all.
     */
    private Node parse(JsonParser parser) {
        Deque<Container> open = new ArrayDeque<>();
        JsonToken token;
        while ((token = parser.nextToken()) != null) {
            if (token == JsonToken.PROPERTY_NAME) {
                ((ObjectBuilder) open.peek()).pendingName = parser.currentName();
                continue;
            }
            Node completed;
            if (token == JsonToken.END_OBJECT || token == JsonToken.END_ARRAY) {
                completed = open.pop().build();
            } else {
                Container parent = open.peek();
                Position position = parent == null ? new Position(0, ignored) : parent.position().child();
                if (parent != null && !parent.position().ignoredBelow().isEmpty()) {
                    Optional<Position> kept = parent.position().into(parent.nextName());
                    if (kept.isEmpty()) {
                        parser.skipChildren(); // a scalar has none: nothing to skip
                        continue;
                    }
                    position = kept.get();
                }
                switch (token) {
                    case START_OBJECT -> {
                        open.push(new ObjectBuilder(position));
                        continue;
                    }
                    case START_ARRAY -> {
                        open.push(new ArrayBuilder(parent instanceof ObjectBuilder object
                                && unorderedArrays.contains(object.pendingName), position));
                        continue;
                    }
                    case VALUE_STRING -> completed = new Literal(quoted(parser.getString()));
                    case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> completed = new Literal(number(parser.getString()));
                    case VALUE_TRUE -> completed = Literal.TRUE;
                    case VALUE_FALSE -> completed = Literal.FALSE;
                    case VALUE_NULL -> completed = Literal.NULL;
                    default -> throw new IllegalStateException("Unexpected token from a JSON parser: " + token);
                }
            }
            if (open.isEmpty()) {
                return completed;
            }
            open.peek().add(completed);
        }
        return null;
    }

    /**
     * Where a container is: {@code depth} segments below the top, with the ignore pointers whose segments so far
     * match its path.
     */
    private record Position(int depth, List<JsonPointer> ignoredBelow) {
        /** A value inside, when no pointer reaches into it. */
        Position child() {
            return new Position(depth + 1, List.of());
        }

        /** A value inside, by its name or index: empty when a pointer ends at it (it is left out). */
        Optional<Position> into(String nameOrIndex) {
            List<JsonPointer> below = new ArrayList<>();
            for (JsonPointer pointer : ignoredBelow) {
                if (pointer.matchesAt(depth, nameOrIndex)) {
                    if (pointer.depth() == depth + 1) {
                        return Optional.empty();
                    }
                    below.add(pointer);
                }
            }
            return Optional.of(new Position(depth + 1, below));
        }
    }

    /**
     * The number's value in one spelling: 1, 1.0, 1e0 and 10E-1 all become "1"; -0 becomes "0"
     * (BigDecimal has no negative zero).
     *
     * @param json a number the parser already validated against the JSON grammar
     */
    static String number(String json) {
        if (isPlainIntegerWithoutTrailingZero(json)) {
            return json; // already how BigDecimal prints it; the common case skips the arithmetic
        }
        int exponentMark = Math.max(json.indexOf('e'), json.indexOf('E'));
        String mantissa = exponentMark < 0 ? json : json.substring(0, exponentMark);
        long exponent = exponentMark < 0 ? 0 : Long.parseLong(json.substring(exponentMark + 1));
        boolean negative = mantissa.startsWith("-");
        int dot = mantissa.indexOf('.');
        String integerDigits = mantissa.substring(negative ? 1 : 0, dot < 0 ? mantissa.length() : dot);
        String fractionDigits = dot < 0 ? "" : mantissa.substring(dot + 1);
        String digits = integerDigits + fractionDigits;
        exponent = Math.subtractExact(exponent, fractionDigits.length());

        // Trailing zeros are dropped here, in one linear pass, because BigDecimal.stripTrailingZeros
        // divides by ten once per zero: a megabyte of 1000-digit powers of ten took ~300 ms that way.
        int end = digits.length();
        while (end > 0 && digits.charAt(end - 1) == '0') {
            end--;
        }
        if (end == 0) {
            return "0";
        }
        exponent = Math.addExact(exponent, digits.length() - end);
        BigInteger unscaled = new BigInteger(digits.substring(0, end));
        BigDecimal value = new BigDecimal(negative ? unscaled.negate() : unscaled, Math.toIntExact(-exponent));
        // toString, not toPlainString: 1e100000 stays short instead of growing to 100001 digits.
        return value.stripTrailingZeros().toString();
    }

    private static boolean isPlainIntegerWithoutTrailingZero(String json) {
        if (json.charAt(json.length() - 1) == '0') {
            return false;
        }
        for (int i = json.charAt(0) == '-' ? 1 : 0; i < json.length(); i++) {
            char c = json.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    private static String quoted(String value) {
        StringBuilder out = new StringBuilder(value.length() + 2);
        out.append('"');
        int length = value.length();
        for (int i = 0; i < length; i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        appendUnicodeEscape(c, out);
                    } else if (Character.isHighSurrogate(c) && i + 1 < length
                            && Character.isLowSurrogate(value.charAt(i + 1))) {
                        out.append(c).append(value.charAt(++i));
                    } else if (Character.isSurrogate(c)) {
                        // UTF-8 cannot carry a lone surrogate; without escaping, "\\ud800" and
                        // "\\ud801" would both encode as '?' and look equal.
                        appendUnicodeEscape(c, out);
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    private static void appendUnicodeEscape(char c, StringBuilder out) {
        String hex = Integer.toHexString(c);
        out.append("\\u");
        for (int pad = hex.length(); pad < 4; pad++) {
            out.append('0');
        }
        out.append(hex);
    }

    /**
     * Orders elements exactly as {@code String.compareTo} would order their canonical texts, but
     * streams both texts instead of building them: building would copy nested sorted arrays once
     * per level, turning a deeply nested body into hundreds of megabytes of copying.
     */
    private static int compareCanonical(Node left, Node right) {
        CanonicalText leftText = new CanonicalText(left);
        CanonicalText rightText = new CanonicalText(right);
        while (true) {
            int leftChar = leftText.nextChar();
            int rightChar = rightText.nextChar();
            if (leftChar != rightChar) {
                return Integer.compare(leftChar, rightChar); // -1 at the end: a prefix sorts first
            }
            if (leftChar < 0) {
                return 0;
            }
        }
    }

    private sealed interface Node permits Literal, ArrayNode, ObjectNode {
    }

    /** Canonical text emitted as is: a scalar value, or punctuation. */
    private record Literal(String text) implements Node {
        static final Literal TRUE = new Literal("true");
        static final Literal FALSE = new Literal("false");
        static final Literal NULL = new Literal("null");
        static final Literal COMMA = new Literal(",");
        static final Literal END_ARRAY = new Literal("]");
        static final Literal END_OBJECT = new Literal("}");
    }

    /** Elements in output order: as received, or sorted when the array is unordered. */
    private record ArrayNode(List<Node> elements) implements Node {
    }

    /** Members sorted by name. */
    private record ObjectNode(List<Member> members) implements Node {
    }

    /** {@code quotedName} is the escaped, quoted name followed by ':', built once. */
    private record Member(String name, String quotedName, Node value) {
    }

    /**
     * The canonical text of a tree as a sequence of fragments, produced with an explicit stack so
     * that deep documents cannot overflow the call stack.
     */
    private static final class CanonicalText {
        private final Deque<Object> pending = new ArrayDeque<>();
        private String fragment = "";
        private int position;

        CanonicalText(Node root) {
            pending.push(root);
        }

        /** The next fragment, or {@code null} at the end. */
        String nextFragment() {
            while (!pending.isEmpty()) {
                Object next = pending.pop();
                if (next instanceof Literal literal) {
                    return literal.text();
                } else if (next instanceof Member member) {
                    pending.push(member.value());
                    return member.quotedName();
                } else if (next instanceof ArrayNode array) {
                    pending.push(Literal.END_ARRAY);
                    pushSeparated(array.elements());
                    return "[";
                } else if (next instanceof ObjectNode object) {
                    pending.push(Literal.END_OBJECT);
                    pushSeparated(object.members());
                    return "{";
                }
                throw new IllegalStateException("Unknown node " + next.getClass());
            }
            return null;
        }

        /** The next character, or -1 at the end. */
        int nextChar() {
            while (position == fragment.length()) {
                String next = nextFragment();
                if (next == null) {
                    return -1;
                }
                fragment = next;
                position = 0;
            }
            return fragment.charAt(position++);
        }

        /** At most the first {@code maxChars} characters. */
        String prefix(int maxChars) {
            StringBuilder out = new StringBuilder(maxChars);
            for (String next = nextFragment(); next != null && out.length() < maxChars; next = nextFragment()) {
                out.append(next, 0, Math.min(next.length(), maxChars - out.length()));
            }
            return out.toString();
        }

        void appendTo(StringBuilder out) {
            for (String next = nextFragment(); next != null; next = nextFragment()) {
                out.append(next);
            }
        }

        /** Pushed in reverse so that they pop in order, with a comma between each pair. */
        private void pushSeparated(List<?> items) {
            for (int i = items.size() - 1; i >= 0; i--) {
                pending.push(items.get(i));
                if (i > 0) {
                    pending.push(Literal.COMMA);
                }
            }
        }
    }

    /** An object or array whose closing token has not been read yet. */
    /** An object or an array being read: where it starts, and its values so far. */
    private abstract static sealed class Container permits ObjectBuilder, ArrayBuilder {
        private final Position position;

        Container(Position position) {
            this.position = position;
        }

        final Position position() {
            return position;
        }

        abstract void add(Node value);

        abstract Node build();

        /** The name of the value about to be read: its member name, or its index in the array as sent. */
        abstract String nextName();
    }

    private static final class ObjectBuilder extends Container {
        private final List<Member> members = new ArrayList<>();
        private String pendingName;

        ObjectBuilder(Position position) {
            super(position);
        }

        @Override
        String nextName() {
            return pendingName;
        }

        @Override
        void add(Node value) {
            members.add(new Member(pendingName, quoted(pendingName) + ':', value));
        }

        @Override
        Node build() {
            members.sort(BY_NAME); // names are unique (strict duplicate detection), so the order is total
            return new ObjectNode(members);
        }
    }

    private static final class ArrayBuilder extends Container {
        private final List<Node> elements = new ArrayList<>();
        private final boolean unordered;
        private int nextIndex;

        ArrayBuilder(boolean unordered, Position position) {
            super(position);
            this.unordered = unordered;
        }

        @Override
        String nextName() {
            return Integer.toString(nextIndex++);
        }

        @Override
        void add(Node value) {
            elements.add(value);
        }

        @Override
        Node build() {
            if (!unordered || elements.size() < 2) {
                return new ArrayNode(elements);
            }
            // Elements may be objects, so they are ordered by their canonical text. Most differ
            // within a few dozen characters: a short prefix, built once per element, settles
            // nearly every comparison, and only ties stream the rest of both texts.
            List<SortableElement> sortable = new ArrayList<>(elements.size());
            for (Node element : elements) {
                sortable.add(new SortableElement(prefix(element), element));
            }
            sortable.sort(BY_CANONICAL_TEXT);
            List<Node> sorted = new ArrayList<>(sortable.size());
            for (SortableElement element : sortable) {
                sorted.add(element.node());
            }
            return new ArrayNode(sorted);
        }
    }

    /**
     * A scalar's text is its own prefix: no copy and no walker per element, which keeps a megabyte of tiny values
     * (the costliest body to sort) from allocating several times its size.
     */
    private static String prefix(Node element) {
        if (element instanceof Literal literal) {
            String text = literal.text();
            return text.length() <= SORT_PREFIX_CHARS ? text : text.substring(0, SORT_PREFIX_CHARS);
        }
        return new CanonicalText(element).prefix(SORT_PREFIX_CHARS);
    }

    /**
     * Comparing prefixes first gives the same order as comparing whole texts: differing prefixes
     * either differ at a position both texts have, or one whole text is a prefix of the other.
     */
    private record SortableElement(String prefix, Node node) {
    }
}
