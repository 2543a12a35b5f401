package dev.retrysafe.gateway.idempotency.reconcile;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A route's {@code reconcile-uri}: a path on the route's own upstream, optionally with a query, with placeholders,
 * {@code {key}} for the forwarded idempotency key and {@code {body:/json/pointer}} for a value of the original JSON
 * body, e.g. {@code /merchants/by-tax-id/{body:/taxId}} or {@code /payments?idempotency_key={key}&tax={body:/taxId}}.
 * Every value is percent-encoded into its place (everything but RFC 3986's unreserved characters), so a value cannot
 * add a segment, a query parameter or a fragment, rename a parameter or end the query; a path segment that would be
 * empty, {@code .} or {@code ..} is refused. Placeholders go in path segments and query values, never in query names.
 * The template itself has no fragment, scheme or host: the lookup only ever goes to the route's upstream.
 */
public final class LookupTemplate {
    public static final String KEY = "key";
    private static final String BODY = "body:";
    private static final Pattern PLACEHOLDER = Pattern.compile("\\{([^{}]*)}");
    /** Literal path characters: RFC 3986 pchar and '/', with percent-escapes. */
    private static final Pattern PATH_LITERAL = Pattern.compile("(?:[A-Za-z0-9\\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*");
    /** Literal query characters of a name or a value: RFC 3986 query chars but '&' and '=', which delimit them. */
    private static final Pattern QUERY_LITERAL = Pattern.compile("(?:[A-Za-z0-9\\-._~!$'()*+,;:@/?]|%[0-9A-Fa-f]{2})*");
    /** Stands for a placeholder while the query is taken apart: no literal has it. */
    private static final char VALUE = '\u0000';
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final String template;
    /** Literal text and placeholder names, alternating: literal, name, literal, ... literal. */
    private final List<String> parts;
    private final Set<String> names;

    private LookupTemplate(String template, List<String> parts, Set<String> names) {
        this.template = template;
        this.parts = parts;
        this.names = names;
    }

    /** @throws IllegalArgumentException naming {@code reconcile-uri} and what is wrong */
    public static LookupTemplate parse(String template) {
        if (template == null || !template.startsWith("/") || template.startsWith("//")) {
            throw new IllegalArgumentException("reconcile-uri must be a path on the route's upstream starting with "
                    + "one '/', such as /merchants/by-tax-id/{body:/taxId}, was " + template);
        }
        List<String> parts = new ArrayList<>();
        Set<String> names = new LinkedHashSet<>();
        // The template with every placeholder as VALUE: where the path ends, what the query's parameters are.
        StringBuilder shape = new StringBuilder();
        Matcher placeholder = PLACEHOLDER.matcher(template);
        int at = 0;
        while (placeholder.find()) {
            String literal = braceless(template.substring(at, placeholder.start()), template);
            parts.add(literal);
            shape.append(literal).append(VALUE);
            String name = placeholder.group(1);
            if (!name.equals(KEY) && !(name.startsWith(BODY + "/") || name.equals(BODY))) {
                throw new IllegalArgumentException("reconcile-uri placeholders are {key} and {body:/json/pointer}, "
                        + "was {" + name + "}");
            }
            if (name.startsWith(BODY)) {
                pointer(name.substring(BODY.length()));
            }
            parts.add(name);
            names.add(name);
            at = placeholder.end();
        }
        String last = braceless(template.substring(at), template);
        parts.add(last);
        shape.append(last);
        int query = shape.indexOf("?");
        path(query < 0 ? shape.toString() : shape.substring(0, query), template);
        if (query >= 0) {
            query(shape.substring(query + 1), template);
        }
        return new LookupTemplate(template, List.copyOf(parts), Set.copyOf(names));
    }

    private static String braceless(String text, String template) {
        if (text.contains("{") || text.contains("}")) {
            throw new IllegalArgumentException("reconcile-uri has a stray brace (placeholders are {key} and "
                    + "{body:/json/pointer}), was " + template);
        }
        return text;
    }

    /** Literal path characters, and no segment that is empty (but a trailing one), '.' or '..'. */
    private static void path(String shape, String template) {
        if (!PATH_LITERAL.matcher(shape.replace(String.valueOf(VALUE), "")).matches()) {
            throw new IllegalArgumentException("reconcile-uri must be a plain path with an optional query (no "
                    + "fragment, spaces or characters a URI does not have), was " + template);
        }
        if (shape.contains("//")) {
            throw new IllegalArgumentException("reconcile-uri must not have an empty path segment ('//'), was "
                    + template);
        }
        for (String segment : shape.split("/", -1)) {
            if (segment.equals(".") || segment.equals("..")) {
                throw new IllegalArgumentException("reconcile-uri must not have '.' or '..' segments, was " + template);
            }
        }
    }

    /** Parameters {@code name=value} or {@code name}, a literal name each; placeholders only in values. */
    private static void query(String shape, String template) {
        for (String parameter : shape.split("&", -1)) {
            int equals = parameter.indexOf('=');
            String name = equals < 0 ? parameter : parameter.substring(0, equals);
            String value = equals < 0 ? "" : parameter.substring(equals + 1);
            if (name.indexOf(VALUE) >= 0) {
                throw new IllegalArgumentException("reconcile-uri placeholders go in query values, not in names "
                        + "(such as ?idempotency_key={key}), was " + template);
            }
            if (name.isEmpty()) {
                throw new IllegalArgumentException("reconcile-uri query parameters are name=value joined by '&', "
                        + "each with a name, was " + template);
            }
            if (!QUERY_LITERAL.matcher(name).matches()
                    || !QUERY_LITERAL.matcher(value.replace(String.valueOf(VALUE), "")).matches()) {
                throw new IllegalArgumentException("reconcile-uri query must be RFC 3986 query characters, with one "
                        + "'=' after each name (no fragment, spaces or stray '='), was " + template);
            }
        }
    }

    private static void pointer(String pointer) {
        if (!pointer.isEmpty() && !pointer.startsWith("/")) {
            throw new IllegalArgumentException("reconcile-uri body values are JSON pointers starting with '/', "
                    + "was " + pointer);
        }
        try {
            tools.jackson.core.JsonPointer.compile(pointer);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("reconcile-uri body value " + pointer + " is not a JSON pointer: "
                    + e.getMessage());
        }
    }

    /** The placeholders it names: only their values are kept with a record. */
    public Set<String> names() {
        return names;
    }

    /**
     * The values a lookup of this request needs, from its forwarded key and body; empty when one is missing (not
     * JSON, no such field, an object or array there, or empty): such a request is not looked up, an operator
     * settles it if it turns UNCERTAIN. Strings as they are, numbers and booleans as their JSON text.
     */
    public Optional<Map<String, String>> values(String key, byte[] body) {
        Map<String, String> values = new LinkedHashMap<>();
        JsonNode json = null;
        for (String name : names) {
            String value;
            if (name.equals(KEY)) {
                value = key;
            } else {
                if (json == null) {
                    json = parse(body);
                    if (json == null) {
                        return Optional.empty();
                    }
                }
                JsonNode node = json.at(name.substring(BODY.length()));
                value = node.isString() || node.isNumber() || node.isBoolean() ? node.asString() : null;
            }
            if (value == null || value.isEmpty()) {
                return Optional.empty();
            }
            values.put(name, value);
        }
        Optional<Map<String, String>> kept = Optional.of(values);
        return expand(values).isPresent() ? kept : Optional.empty();
    }

    /**
     * The lookup's path and query (raw, percent-encoded) for these values, or empty when one is missing or empty, or
     * would make a path segment {@code .} or {@code ..}.
     */
    public Optional<String> expand(Map<String, String> values) {
        StringBuilder uri = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            if (i % 2 == 0) {
                uri.append(parts.get(i));
                continue;
            }
            String value = values.get(parts.get(i));
            if (value == null || value.isEmpty()) {
                return Optional.empty();
            }
            uri.append(encode(value));
        }
        String raw = uri.toString();
        // A value's '?' is encoded: the first one is the template's own, where its query begins.
        int query = raw.indexOf('?');
        for (String segment : raw.substring(1, query < 0 ? raw.length() : query).split("/", -1)) {
            if (segment.equals(".") || segment.equals("..")) {
                return Optional.empty();
            }
        }
        return Optional.of(raw);
    }

    /**
     * Everything but unreserved characters, as UTF-8 percent-escapes: '/', '?', '#', '%' stay in the segment, and
     * '&', '=', '+', '#' in the query value.
     */
    static String encode(String value) {
        StringBuilder out = new StringBuilder(value.length() * 3);
        for (byte b : value.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xFF;
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'
                    || c == '_' || c == '~') {
                out.append((char) c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xF, 16)));
            }
        }
        return out.toString();
    }

    private static JsonNode parse(byte[] body) {
        try {
            return JSON.readTree(body);
        } catch (JacksonException e) {
            return null;
        }
    }

    @Override
    public String toString() {
        return template;
    }
}
