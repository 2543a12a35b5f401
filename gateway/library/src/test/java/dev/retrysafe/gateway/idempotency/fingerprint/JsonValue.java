package dev.retrysafe.gateway.idempotency.fingerprint;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * A JSON document as a value, independent of how it is spelled: the model the property tests generate, spell in
 * many ways ({@link JsonSpelling}) and change in exactly one place ({@link #changedOnce}).
 */
sealed interface JsonValue {

    record JsonString(String value) implements JsonValue {
    }

    record JsonNumber(BigDecimal value) implements JsonValue {
    }

    record JsonBoolean(boolean value) implements JsonValue {
    }

    record JsonNull() implements JsonValue {
    }

    record JsonArray(List<JsonValue> elements) implements JsonValue {
        public JsonArray {
            elements = List.copyOf(elements);
        }
    }

    /** Members in insertion order; names are unique (a duplicate name makes a body not canonicalisable). */
    record JsonObject(Map<String, JsonValue> members) implements JsonValue {
        public JsonObject {
            members = Collections.unmodifiableMap(new LinkedHashMap<>(members));
        }
    }

    /** How many values the document holds, containers included. */
    default int size() {
        if (this instanceof JsonArray array) {
            return 1 + array.elements().stream().mapToInt(JsonValue::size).sum();
        }
        if (this instanceof JsonObject object) {
            return 1 + object.members().values().stream().mapToInt(JsonValue::size).sum();
        }
        return 1;
    }

    /**
     * The same document with one thing changed that changes what it means: a scalar's value or type, an element or
     * member added or removed, a member renamed, or two different elements of an ordered array swapped. Empty when
     * the chosen place offers no such change (an ordered array without two different elements to swap).
     *
     * @param unorderedArrays names whose arrays are sets: swapping their elements changes nothing, so it is not
     *                        offered there
     * @param differ          whether two elements differ in meaning (the oracle for "swap changes the order")
     */
    default Optional<JsonValue> changedOnce(Random random, Set<String> unorderedArrays,
            BiPredicate<JsonValue, JsonValue> differ) {
        int target = random.nextInt(size());
        return new Change(random, unorderedArrays, differ, target).apply(this, false);
    }

    /** Walks the document in pre-order and changes the value at position {@code target}. */
    final class Change {
        private final Random random;
        private final Set<String> unorderedArrays;
        private final BiPredicate<JsonValue, JsonValue> differ;
        private final int target;
        private int position;

        Change(Random random, Set<String> unorderedArrays, BiPredicate<JsonValue, JsonValue> differ,
                int target) {
            this.random = random;
            this.unorderedArrays = unorderedArrays;
            this.differ = differ;
            this.target = target;
        }

        Optional<JsonValue> apply(JsonValue value, boolean inUnorderedPlace) {
            if (position++ == target) {
                return changeHere(value, inUnorderedPlace);
            }
            if (value instanceof JsonArray array) {
                for (int i = 0; i < array.elements().size(); i++) {
                    Optional<JsonValue> changed = apply(array.elements().get(i), false);
                    if (position > target) { // the target was inside this element
                        int index = i;
                        return changed.map(c -> {
                            List<JsonValue> elements = new ArrayList<>(array.elements());
                            elements.set(index, c);
                            return new JsonArray(elements);
                        });
                    }
                }
            } else if (value instanceof JsonObject object) {
                for (Map.Entry<String, JsonValue> member : object.members().entrySet()) {
                    Optional<JsonValue> changed = apply(member.getValue(), unorderedArrays.contains(member.getKey()));
                    if (position > target) {
                        return changed.map(c -> {
                            Map<String, JsonValue> members = new LinkedHashMap<>(object.members());
                            members.put(member.getKey(), c);
                            return new JsonObject(members);
                        });
                    }
                }
            }
            return Optional.empty();
        }

        private Optional<JsonValue> changeHere(JsonValue value, boolean unordered) {
            if (value instanceof JsonString text) {
                return Optional.of(random.nextBoolean() ? new JsonString(text.value() + (char) ('a' + random.nextInt(26)))
                        : new JsonNumber(new BigDecimal(text.value().length())));
            }
            if (value instanceof JsonNumber number) {
                BigDecimal step = BigDecimal.ONE.movePointLeft(Math.max(0, number.value().scale()) + random.nextInt(30));
                return Optional.of(switch (random.nextInt(3)) {
                    case 0 -> new JsonNumber(number.value().add(step));
                    case 1 -> new JsonNumber(number.value().subtract(step));
                    default -> new JsonString(number.value().toPlainString());
                });
            }
            if (value instanceof JsonBoolean bool) {
                return Optional.of(random.nextBoolean() ? new JsonBoolean(!bool.value()) : new JsonNull());
            }
            if (value instanceof JsonNull) {
                return Optional.of(random.nextBoolean() ? new JsonBoolean(false) : new JsonString("null"));
            }
            if (value instanceof JsonArray array) {
                List<JsonValue> elements = new ArrayList<>(array.elements());
                int choice = random.nextInt(3);
                if (choice == 0 || elements.isEmpty()) {
                    elements.add(random.nextInt(elements.size() + 1), new JsonNumber(BigDecimal.valueOf(random.nextInt(9))));
                } else if (choice == 1) {
                    elements.remove(random.nextInt(elements.size()));
                } else {
                    if (unordered) {
                        return Optional.empty(); // a set: its order means nothing
                    }
                    return swapTwoDifferent(elements);
                }
                return Optional.of(new JsonArray(elements));
            }
            JsonObject object = (JsonObject) value;
            Map<String, JsonValue> members = new LinkedHashMap<>(object.members());
            String fresh = freshName(members);
            if (members.isEmpty() || random.nextInt(3) == 0) {
                members.put(fresh, new JsonNull());
            } else {
                List<String> names = new ArrayList<>(members.keySet());
                String chosen = names.get(random.nextInt(names.size()));
                if (random.nextBoolean()) {
                    members.remove(chosen);
                } else {
                    // Renamed in place: same value, same position, another name.
                    Map<String, JsonValue> renamed = new LinkedHashMap<>();
                    members.forEach((name, member) -> renamed.put(name.equals(chosen) ? fresh : name, member));
                    members = renamed;
                }
            }
            return Optional.of(new JsonObject(members));
        }

        private Optional<JsonValue> swapTwoDifferent(List<JsonValue> elements) {
            for (int attempt = 0; attempt < 8 && elements.size() >= 2; attempt++) {
                int i = random.nextInt(elements.size());
                int j = random.nextInt(elements.size());
                if (differ.test(elements.get(i), elements.get(j))) {
                    JsonValue first = elements.get(i);
                    elements.set(i, elements.get(j));
                    elements.set(j, first);
                    return Optional.of(new JsonArray(elements));
                }
            }
            return Optional.empty();
        }

        private String freshName(Map<String, JsonValue> members) {
            String name;
            do {
                name = "renamed" + random.nextInt(1000);
            } while (members.containsKey(name));
            return name;
        }
    }
}
