package dev.retrysafe.gateway.idempotency.fingerprint;

import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonArray;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonBoolean;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonNumber;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonObject;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonString;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Writes a {@link JsonValue} as valid JSON text in one of its many spellings, chosen by a random source: members in
 * any order, elements of the named unordered arrays in any order, any insignificant whitespace, every character of
 * a string either literal or escaped (when JSON allows both), and every number in any notation of its exact value
 * (1, 1.0, 10E-1, 0.1e+1). Each option can be switched off, so a property can vary one thing at a time.
 */
final class JsonSpelling {
    private static final String WHITESPACE = " \t\n\r";

    private final Random random;
    private final Set<String> unorderedArrays;
    private final boolean reorderMembers;
    private final boolean reorderUnorderedArrays;
    private final boolean varyText;

    private JsonSpelling(Random random, Set<String> unorderedArrays, boolean reorderMembers,
            boolean reorderUnorderedArrays, boolean varyText) {
        this.random = random;
        this.unorderedArrays = unorderedArrays;
        this.reorderMembers = reorderMembers;
        this.reorderUnorderedArrays = reorderUnorderedArrays;
        this.varyText = varyText;
    }

    /** Everything varies. */
    static JsonSpelling any(long seed, Set<String> unorderedArrays) {
        return new JsonSpelling(new Random(seed), unorderedArrays, true, true, true);
    }

    /** The plainest spelling: members and elements as given, no whitespace, no optional escapes. */
    static JsonSpelling plain(Set<String> unorderedArrays) {
        return new JsonSpelling(new Random(0), unorderedArrays, false, false, false);
    }

    static JsonSpelling onlyMembersReordered(long seed) {
        return new JsonSpelling(new Random(seed), Set.of(), true, false, false);
    }

    static JsonSpelling onlyUnorderedArraysReordered(long seed, Set<String> unorderedArrays) {
        return new JsonSpelling(new Random(seed), unorderedArrays, false, true, false);
    }

    static JsonSpelling onlyTextVaried(long seed) {
        return new JsonSpelling(new Random(seed), Set.of(), false, false, true);
    }

    byte[] bytes(JsonValue value) {
        return text(value).getBytes(StandardCharsets.UTF_8);
    }

    String text(JsonValue value) {
        StringBuilder out = new StringBuilder();
        space(out);
        write(value, false, out);
        space(out);
        return out.toString();
    }

    private void write(JsonValue value, boolean unordered, StringBuilder out) {
        if (value instanceof JsonString text) {
            string(text.value(), out);
        } else if (value instanceof JsonNumber number) {
            out.append(number(number.value()));
        } else if (value instanceof JsonBoolean bool) {
            out.append(bool.value());
        } else if (value instanceof JsonArray array) {
            List<JsonValue> elements = new ArrayList<>(array.elements());
            if (unordered && reorderUnorderedArrays) {
                Collections.shuffle(elements, random);
            }
            out.append('[');
            for (int i = 0; i < elements.size(); i++) {
                separator(i, out);
                write(elements.get(i), false, out);
            }
            space(out);
            out.append(']');
        } else if (value instanceof JsonObject object) {
            List<Map.Entry<String, JsonValue>> members = new ArrayList<>(object.members().entrySet());
            if (reorderMembers) {
                Collections.shuffle(members, random);
            }
            out.append('{');
            for (int i = 0; i < members.size(); i++) {
                separator(i, out);
                string(members.get(i).getKey(), out);
                space(out);
                out.append(':');
                space(out);
                write(members.get(i).getValue(), unorderedArrays.contains(members.get(i).getKey()), out);
            }
            space(out);
            out.append('}');
        } else {
            out.append("null");
        }
    }

    private void separator(int index, StringBuilder out) {
        space(out);
        if (index > 0) {
            out.append(',');
            space(out);
        }
    }

    private void space(StringBuilder out) {
        if (varyText) {
            for (int n = random.nextInt(3); n > 0; n--) {
                out.append(WHITESPACE.charAt(random.nextInt(WHITESPACE.length())));
            }
        }
    }

    private void string(String value, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            boolean pair = Character.isHighSurrogate(c) && i + 1 < value.length()
                    && Character.isLowSurrogate(value.charAt(i + 1));
            boolean escape = varyText && random.nextInt(4) == 0;
            if (pair) {
                char low = value.charAt(++i);
                if (escape) {
                    unicodeEscape(c, out);
                    unicodeEscape(low, out);
                } else {
                    out.append(c).append(low);
                }
            } else if (Character.isSurrogate(c)) {
                unicodeEscape(c, out); // a lone surrogate has no UTF-8 form: JSON text can only escape it
            } else if (c == '"' || c == '\\' || c < 0x20) {
                String shortForm = switch (c) {
                    case '"' -> "\\\"";
                    case '\\' -> "\\\\";
                    case '\b' -> "\\b";
                    case '\f' -> "\\f";
                    case '\n' -> "\\n";
                    case '\r' -> "\\r";
                    case '\t' -> "\\t";
                    default -> null;
                };
                if (shortForm != null && !escape) {
                    out.append(shortForm);
                } else {
                    unicodeEscape(c, out);
                }
            } else if (c == '/' && escape && random.nextBoolean()) {
                out.append("\\/");
            } else if (escape) {
                unicodeEscape(c, out);
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }

    private void unicodeEscape(char c, StringBuilder out) {
        String hex = String.format("%04x", (int) c);
        out.append("\\u").append(varyText && random.nextBoolean() ? hex.toUpperCase() : hex);
    }

    /**
     * Some notation of exactly {@code value}: its digits with up to three extra trailing zeros, the decimal point
     * anywhere among them (or "0." and leading zeros before them), and the exponent that makes up for both, written
     * with e or E, with or without '+', with or without leading zeros. Zero may come with a minus sign.
     */
    String number(BigDecimal value) {
        if (!varyText) {
            return value.toString().replace("E", "e");
        }
        BigInteger unscaled = value.unscaledValue();
        boolean negative = unscaled.signum() < 0 || (unscaled.signum() == 0 && random.nextBoolean());
        String digits = unscaled.signum() == 0 ? "0" : unscaled.abs().toString();
        long exponent = -(long) value.scale();
        if (unscaled.signum() != 0) {
            int extraZeros = random.nextInt(4);
            digits += "0".repeat(extraZeros);
            exponent -= extraZeros;
        }
        String mantissa;
        int point = random.nextInt(digits.length() + 1);
        if (point == 0 && random.nextBoolean()) {
            int leadingZeros = random.nextInt(3);
            mantissa = "0." + "0".repeat(leadingZeros) + digits;
            exponent += leadingZeros + digits.length();
        } else if (point == 0 || point == digits.length()) {
            mantissa = digits;
        } else {
            mantissa = digits.substring(0, point) + "." + digits.substring(point);
            exponent += digits.length() - point;
        }
        StringBuilder out = new StringBuilder(negative ? "-" : "").append(mantissa);
        if (exponent != 0 || random.nextInt(4) == 0) {
            out.append(random.nextBoolean() ? 'e' : 'E');
            if (exponent < 0) {
                out.append('-');
            } else if (random.nextBoolean()) {
                out.append('+');
            }
            out.append("0".repeat(random.nextInt(2))).append(Math.abs(exponent));
        }
        return out.toString();
    }
}
