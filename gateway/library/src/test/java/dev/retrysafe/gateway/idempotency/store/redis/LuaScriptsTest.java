package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The shared Lua pieces: expanded where a script names them, and written nowhere else. */
class LuaScriptsTest {
    static final Path SCRIPTS = Path.of("src/main/resources/META-INF/scripts");

    @Test
    void anIncludeIsReplacedByItsPieceOnceAndNothingOfTheLineIsLeft() {
        String complete = LuaScripts.source("idempotency_complete.lua");

        assertThat(complete).doesNotContain("-- include:");
        assertThat(complete.split("local function now_ms\\(\\)", -1)).hasSize(2);
        assertThat(complete).contains("local function queue_process(", "local function write_anew(");
        assertThat(complete.indexOf("local function now_ms()")).isLessThan(complete.indexOf("now_ms()\n", complete
                .indexOf("local now = ")));
    }

    @Test
    void anUnknownPieceFailsTheLoadNamingIt() {
        assertThatThrownBy(() -> LuaScripts.source("test_unknown_include.lua"))
                .hasMessageContaining("lib/no_such_piece.lua");
    }

    @Test
    void aPieceThatIncludesAnotherIsRefused() {
        assertThatThrownBy(() -> LuaScripts.source("test_nested_include.lua"))
                .hasMessageContaining("lib/test_nesting.lua").hasMessageContaining("includes another");
    }

    /** What the pieces say is written once: a script that spelled it out again would drift from the others. */
    @Test
    void noScriptSpellsOutWhatAPieceSays() throws IOException {
        for (Path script : scripts()) {
            String text = Files.readString(script);
            assertThat(text).as(script + ": Redis's clock is lib/now.lua").doesNotContain("redis.call('TIME')");
            assertThat(text).as(script + ": queueing a process is lib/process_queue.lua")
                    .doesNotContain("'process_state', 'PENDING'");
            assertThat(text).as(script + ": a record anew is lib/record_anew.lua").doesNotContain("'restored', 1");
        }
    }

    @Test
    void everyScriptThatUsesAPieceIncludesIt() throws IOException {
        for (Path script : scripts()) {
            String name = script.getFileName().toString();
            String text = Files.readString(script);
            for (String[] piece : List.of(new String[] {"now_ms()", "now.lua"},
                    new String[] {"queue_process(", "process_queue.lua"}, new String[] {"write_anew(", "record_anew.lua"},
                    new String[] {"count_slot(", "unsettled_count.lua"},
                    new String[] {"not_settleable(", "operator_settleable.lua"})) {
                if (text.contains(piece[0])) {
                    assertThat(text).as(name).contains("-- include: " + piece[1]);
                }
            }
            assertThat(LuaScripts.source(name)).as(name).doesNotContain("-- include:");
            if (text.startsWith("#!")) {
                assertThat(LuaScripts.source(name)).as(name + ": Redis reads its flags from the first line only")
                        .startsWith(text.substring(0, text.indexOf('\n')));
            }
        }
    }

    private static List<Path> scripts() throws IOException {
        try (Stream<Path> files = Files.list(SCRIPTS)) {
            return files.filter(p -> p.toString().endsWith(".lua")).sorted().toList();
        }
    }
}
