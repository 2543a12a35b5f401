package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each script's call record ({@link StoreScripts}) against the script's own header: the names and order of its
 * keys, arguments and reply elements, and that the record writes each component where its name says (every
 * component given a value of its own, each flag set alone in turn). A component swapped, dropped or renamed on one
 * side only fails here, not in Redis.
 */
class ScriptContractTest {
    private static final Pattern LINE = Pattern.compile("(?m)^-- (keys|argv|reply)(?: ([a-z-]+))?:(.*)$");

    static Stream<Class<?>> calls() {
        return Arrays.stream(StoreScripts.class.getDeclaredClasses())
                .filter(type -> type.isRecord() && ScriptCall.class.isAssignableFrom(type))
                .sorted((a, b) -> a.getSimpleName().compareTo(b.getSimpleName()));
    }

    @ParameterizedTest
    @MethodSource("calls")
    void aCallNamesWhatItsScriptsHeaderNamesInTheSameOrder(Class<?> type) throws Exception {
        ScriptCall<?> call = (ScriptCall<?>) instance(type, new Markers(-1));
        Header header = Header.of(call.script());
        String operation = header.operation(call);

        List<String> names = new ArrayList<>();
        flatNames(type, "", names);
        List<String> expected = new ArrayList<>(header.names("keys", operation));
        expected.addAll(header.names("argv", operation));
        assertThat(names).as("%s against the header of %s", type.getSimpleName(), call.script().name())
                .isEqualTo(expected);
    }

    @ParameterizedTest
    @MethodSource("calls")
    void aCallWritesEachComponentWhereItsNameSays(Class<?> type) throws Exception {
        int flags = countFlags(type);
        for (int setAlone = -1; setAlone < flags; setAlone++) {
            Markers markers = new Markers(setAlone);
            ScriptCall<?> call = (ScriptCall<?>) instance(type, markers);
            Header header = Header.of(call.script());
            String operation = header.operation(call);

            List<String> written = new ArrayList<>(call.keys());
            List<byte[]> args = call.args();
            args.subList(operation == null ? 0 : 1, args.size())
                    .forEach(arg -> written.add(new String(arg, StandardCharsets.UTF_8)));
            assertThat(written).as("%s (flag %d set alone)", type.getSimpleName(), setAlone)
                    .isEqualTo(markers.written);
            assertThat(call.keys()).as("%s: its KEYS are the header's keys", type.getSimpleName())
                    .hasSize(markers.writtenWithin(header.names("keys", operation)));
        }
    }

    @ParameterizedTest
    @MethodSource("calls")
    void aReplyIsReadByTheNamesItsHeaderGivesInTheirOrder(Class<?> type) throws Exception {
        ScriptCall<?> call = (ScriptCall<?>) instance(type, new Markers(-1));
        Header header = Header.of(call.script());
        Class<?> reply = replyType(type);
        List<String> named = header.names("reply", header.hasOperations() ? header.operation(call) : null);
        if (reply == null || !reply.isRecord()) {
            assertThat(named).as("%s replies a value: its header names no elements", type.getSimpleName()).isEmpty();
            return;
        }
        RecordComponent[] components = reply.getRecordComponents();
        assertThat(Arrays.stream(components).map(c -> snake(c.getName())).toList())
                .as("%s.Reply against the header of %s", type.getSimpleName(), call.script().name())
                .isEqualTo(named.stream().map(n -> n.replace("...", "")).toList());

        // A reply of distinct elements, one more than its fixed ones (a list at the end takes the rest).
        List<Object> elements = new ArrayList<>();
        for (int i = 0; i < components.length + 1; i++) {
            elements.add(("r" + i).getBytes(StandardCharsets.UTF_8));
        }
        Object read = call.reply(elements);
        for (int i = 0; i < components.length; i++) {
            Object value = components[i].getAccessor().invoke(read);
            Object expected = components[i].getType() == List.class
                    ? List.of("r" + i, "r" + (i + 1))
                    : components[i].getType() == byte[].class ? null : "r" + i;
            if (expected == null) {
                assertThat(new String((byte[]) value, StandardCharsets.UTF_8)).isEqualTo("r" + i);
            } else {
                assertThat(value).as("%s.Reply.%s", type.getSimpleName(), components[i].getName()).isEqualTo(expected);
            }
        }
    }

    @Test
    void everyScriptAndEachOfItsOperationsHasACallRecord() throws Exception {
        Set<String> covered = new TreeSet<>();
        for (Class<?> type : calls().toList()) {
            ScriptCall<?> call = (ScriptCall<?>) instance(type, new Markers(-1));
            String operation = Header.of(call.script()).operation(call);
            covered.add(call.script().name() + (operation == null ? "" : " " + operation));
        }
        Set<String> expected = new TreeSet<>();
        try (Stream<Path> files = Files.list(LuaScriptsTest.SCRIPTS)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".lua")).toList()) {
                String name = file.getFileName().toString();
                Header header = Header.of(LuaScript.of(name, Files.readString(file), null));
                if (header.operations().isEmpty()) {
                    expected.add(name);
                } else {
                    header.operations().forEach(op -> expected.add(name + " " + op));
                }
            }
        }
        assertThat(covered).isEqualTo(expected);
    }

    /** What a script's header names: its lines by tag and operation, in order. */
    private record Header(Map<String, List<String>> lines) {
        static Header of(LuaScript script) {
            Map<String, List<String>> lines = new LinkedHashMap<>();
            Matcher line = LINE.matcher(script.body());
            while (line.find()) {
                String tag = line.group(1) + (line.group(2) == null ? "" : " " + line.group(2));
                List<String> names = lines.computeIfAbsent(tag, t -> new ArrayList<>());
                Arrays.stream(line.group(3).split(","))
                        .map(name -> name.replace("[", "").replace("]", "").trim())
                        .filter(name -> !name.isEmpty())
                        .forEach(names::add);
            }
            assertThat(lines).as("%s has a '-- keys:' line", script.name()).containsKey("keys");
            return new Header(lines);
        }

        boolean hasOperations() {
            return !operations().isEmpty();
        }

        /** The operation a call runs: its first argument, for a script of several. */
        String operation(ScriptCall<?> call) {
            if (!hasOperations()) {
                assertThat(lines).as("%s has a '-- argv:' line", call.script().name()).containsKey("argv");
                return null;
            }
            String operation = new String(call.args().get(0), StandardCharsets.UTF_8);
            assertThat(operations()).as("operations of %s", call.script().name()).contains(operation);
            return operation;
        }

        /**
         * The names on the tag's lines; for an operation, the argv and reply lines of that operation, and the keys
         * every operation has followed by those it has of its own.
         */
        List<String> names(String tag, String operation) {
            List<String> names = new ArrayList<>();
            if (operation == null || tag.equals("keys")) {
                names.addAll(lines.getOrDefault(tag, List.of()));
            }
            if (operation != null) {
                names.addAll(lines.getOrDefault(tag + " " + operation, List.of()));
            }
            return names;
        }

        List<String> operations() {
            return lines.keySet().stream().filter(tag -> tag.startsWith("argv ")).map(tag -> tag.substring(5))
                    .toList();
        }
    }

    /** Gives each component a value of its own and remembers how it should be written, in order. */
    private static final class Markers {
        private final int flagSetAlone;
        private int next;
        private int flags;
        final List<String> written = new ArrayList<>();
        final List<String> writtenNames = new ArrayList<>();

        Markers(int flagSetAlone) {
            this.flagSetAlone = flagSetAlone;
        }

        Object value(Class<?> type, String name) throws Exception {
            int n = next++;
            if (type == String.class) {
                return wrote(name, "v" + n, "v" + n);
            }
            if (type == byte[].class) {
                wrote(name, "b" + n, null);
                return ("b" + n).getBytes(StandardCharsets.UTF_8);
            }
            if (type == Duration.class) {
                wrote(name, Long.toString(1000 + n), null);
                return Duration.ofMillis(1000 + n);
            }
            if (type == int.class || type == long.class) {
                wrote(name, Integer.toString(100 + n), null);
                return type == int.class ? (Object) (100 + n) : (Object) (100L + n);
            }
            if (type == boolean.class) {
                boolean set = flags++ == flagSetAlone;
                wrote(name, set ? "1" : "0", null);
                return set;
            }
            if (type == List.class) {
                wrote(name, "l" + n + "a", null);
                wrote(name, "l" + n + "b", null);
                return List.of("l" + n + "a", "l" + n + "b");
            }
            if (type.isRecord()) {
                return instance(type, this);
            }
            throw new AssertionError("No marker for a component of type " + type);
        }

        private Object wrote(String name, String text, Object value) {
            written.add(text);
            writtenNames.add(name);
            return value;
        }

        /** How many written values the header's names (a list's, each of its elements) account for. */
        int writtenWithin(List<String> headerNames) {
            int count = 0;
            for (String name : headerNames) {
                count += name.endsWith("...") ? 2 : 1;
            }
            return count;
        }
    }

    private static Object instance(Class<?> type, Markers markers) throws Exception {
        RecordComponent[] components = type.getRecordComponents();
        Object[] values = new Object[components.length];
        Class<?>[] types = new Class<?>[components.length];
        for (int i = 0; i < components.length; i++) {
            types[i] = components[i].getType();
            values[i] = markers.value(types[i], components[i].getName());
        }
        Constructor<?> canonical = type.getDeclaredConstructor(types);
        canonical.setAccessible(true);
        return canonical.newInstance(values);
    }

    private static void flatNames(Class<?> type, String prefix, List<String> names) {
        for (RecordComponent component : type.getRecordComponents()) {
            String name = prefix + snake(component.getName());
            Class<?> componentType = component.getType();
            if (componentType.isRecord()) {
                flatNames(componentType, name + "_", names);
            } else if (componentType == Duration.class) {
                names.add(name + "_ms");
            } else if (componentType == List.class) {
                names.add(name + "...");
            } else {
                names.add(name);
            }
        }
    }

    private static int countFlags(Class<?> type) {
        int flags = 0;
        for (RecordComponent component : type.getRecordComponents()) {
            flags += component.getType() == boolean.class ? 1
                    : component.getType().isRecord() ? countFlags(component.getType()) : 0;
        }
        return flags;
    }

    private static Class<?> replyType(Class<?> call) {
        for (Type implemented : call.getGenericInterfaces()) {
            if (implemented instanceof ParameterizedType p && p.getRawType() == ScriptCall.class
                    && p.getActualTypeArguments()[0] instanceof Class<?> reply) {
                return reply;
            }
        }
        return null;
    }

    private static String snake(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase();
    }

    @Test
    void namesAreReadAsTheContractSays() {
        assertThat(snake("releasedOwnersTtl")).isEqualTo("released_owners_ttl");
        List<String> names = new ArrayList<>();
        flatNames(StoreScripts.Release.class, "", names);
        assertThat(names).containsSubsequence("wake_up_channel", "wake_up_message", "wake_up_sharded",
                "released_owners_ttl_ms");
        assertThat(names.stream().collect(Collectors.joining(","))).startsWith("record,released_owners,");
    }
}
