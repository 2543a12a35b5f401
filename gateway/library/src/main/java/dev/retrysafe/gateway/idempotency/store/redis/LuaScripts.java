package dev.retrysafe.gateway.idempotency.store.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The store's Lua scripts, read once from {@code META-INF/scripts} (Spring Data's script over a classpath resource asks
 * the class loader for the file's modification time on every call; where the library is a jar nested in an
 * application's jar, that lookup was most of the CPU a replay cost) and run by {@link StoreConnection} only.
 * <p>
 * Pieces several scripts share (Redis's clock, queueing a process, writing a vanished record anew) are written once
 * under {@code META-INF/scripts/lib}, as {@code local function}s, and a script names each it uses on a line of its
 * own, {@code -- include: now.lua}, which is replaced by the piece when the script is read. Redis still sees one
 * script, run by one EVALSHA; a piece includes nothing itself.
 */
public final class LuaScripts {
    private static final Pattern INCLUDE = Pattern.compile("(?m)^-- include: ([a-z_]+\\.lua)$");

    private LuaScripts() {
    }

    /** The text Redis runs for the script {@code name}, its includes expanded (what its SHA is computed from). */
    public static String source(String name) {
        return read(name);
    }

    /** For {@link StoreConnection}: run by SHA, its body sent only to a master that answers {@code NOSCRIPT}. */
    static LuaScript script(String name, ScriptOutputType output) {
        return LuaScript.of(name, read(name), output);
    }

    private static String read(String name) {
        String script = resource(name);
        Matcher include = INCLUDE.matcher(script);
        StringBuilder expanded = new StringBuilder();
        while (include.find()) {
            String piece = resource("lib/" + include.group(1));
            if (INCLUDE.matcher(piece).find()) {
                throw new IllegalStateException("Lua piece lib/" + include.group(1) + " includes another: pieces are "
                        + "included by scripts only");
            }
            include.appendReplacement(expanded, Matcher.quoteReplacement(piece.stripTrailing()));
        }
        include.appendTail(expanded);
        return expanded.toString();
    }

    private static String resource(String name) {
        String path = "META-INF/scripts/" + name;
        try (InputStream in = LuaScripts.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("Lua script " + path + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Lua script " + path + " could not be read", e);
        }
    }
}
