package dev.retrysafe.gateway.idempotency.key;

import dev.retrysafe.gateway.idempotency.pointer.JsonPointer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Where a route's idempotency key comes from (route arg {@code key-from}): a header the client sends
 * ({@code header:Idempotency-Key}, the default), or a stable id of the business event in the request body
 * ({@code body:/id}), for senders that redeliver an event with its own id and never send a key.
 */
public sealed interface KeySource {

    /** @throws IllegalArgumentException naming the arg, when {@code spec} is neither form */
    static KeySource parse(String spec) {
        String value = Objects.requireNonNull(spec, "spec").trim();
        if (value.regionMatches(true, 0, "header:", 0, 7) && !value.substring(7).isBlank()) {
            return new Header(value.substring(7).trim());
        }
        if (value.regionMatches(true, 0, "body:", 0, 5)) {
            JsonPointer pointer;
            try {
                pointer = JsonPointer.parse(value.substring(5).trim());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("key-from " + e.getMessage(), e);
            }
            return new BodyField(pointer);
        }
        throw new IllegalArgumentException("key-from must be header:NAME or body:/json/pointer, was '" + spec + "'");
    }

    /** The key is the value of a request header, checked against the route's {@link KeyPolicy}. */
    record Header(String name) implements KeySource {
        public Header {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("key-header must not be blank");
            }
        }

        public KeyCheck check(KeyPolicy policy, List<String> values) {
            return policy.check(name, values);
        }

        /** Header names compare without case. */
        public boolean sameHeader(String other) {
            return name.toLowerCase(Locale.ROOT).equals(other.trim().toLowerCase(Locale.ROOT));
        }
    }

    /**
     * The key is derived from the string or number at {@code pointer} in a JSON body. The client did not choose
     * it, so no length or character rule applies: whatever its size, the key is the SHA-256 of the value (43
     * characters), typed so that {@code 42} and {@code "42"} are two keys.
     */
    record BodyField(JsonPointer pointer) implements KeySource {
        // Duplicate names are ambiguous (backends disagree on which value wins): such a body has no one id.
        private static final JsonMapper JSON = JsonMapper.builder()
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .build();

        public BodyField {
            Objects.requireNonNull(pointer, "pointer");
            if (pointer.hasWildcard()) {
                throw new IllegalArgumentException("key-from must name one field of the body, '*' matches many: "
                        + pointer);
            }
        }

        /** The key derived from the body, or a rejection naming where the key was looked for and what was there. */
        public KeyCheck keyIn(byte[] body) {
            JsonNode root;
            try {
                root = JSON.readTree(body);
            } catch (JacksonException notJson) {
                return reject("the body is not valid JSON.");
            }
            if (root == null || root.isMissingNode()) {
                return reject("the body is not valid JSON.");
            }
            JsonNode value = root.at(tools.jackson.core.JsonPointer.compile(pointer.toString()));
            if (value.isMissingNode()) {
                return missing("it is missing.");
            }
            if (value.isNull()) {
                return missing("it is null.");
            }
            if (value.isString()) {
                return value.stringValue().isEmpty() ? reject("it is empty.") : derived("string", value.stringValue());
            }
            if (value.isNumber()) {
                return derived("number", value.isIntegralNumber() ? value.bigIntegerValue().toString()
                        : value.decimalValue().toString());
            }
            return reject("it must be a string or a number, was " + (value.isObject() ? "an object"
                    : value.isArray() ? "an array" : "a boolean") + ".");
        }

        /** No value where the key is taken from: the event carries no id (null is no id either). */
        private KeyCheck missing(String what) {
            return KeyCheck.Rejected.missing(where() + what);
        }

        private KeyCheck reject(String what) {
            return KeyCheck.Rejected.malformed(where() + what);
        }

        private String where() {
            return "The idempotency key is taken from the request body at " + pointer + "; ";
        }

        private static KeyCheck derived(String type, String value) {
            try {
                byte[] digest = MessageDigest.getInstance("SHA-256")
                        .digest((type + ":" + value).getBytes(StandardCharsets.UTF_8));
                return new KeyCheck.Valid(new IdempotencyKey(Base64.getUrlEncoder().withoutPadding()
                        .encodeToString(digest)));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("Every Java platform must provide SHA-256", e);
            }
        }
    }
}
