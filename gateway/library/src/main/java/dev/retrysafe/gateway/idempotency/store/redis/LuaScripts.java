package dev.retrysafe.gateway.idempotency.store.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * The store's Lua scripts, read once from {@code META-INF/scripts}. A {@link RedisScript} over a classpath resource
 * asks the class loader for the file's modification time on every call; where the library is a jar nested in an
 * application's jar, that lookup was most of the CPU a replay cost.
 */
final class LuaScripts {
    private LuaScripts() {
    }

    static <T> RedisScript<T> load(String name, Class<T> type) {
        return RedisScript.of(read(name), type);
    }

    /** For {@link StoreConnection}: run by SHA, its body sent only to a master that answers {@code NOSCRIPT}. */
    static LuaScript script(String name, ScriptOutputType output) {
        return LuaScript.of(name, read(name), output);
    }

    private static String read(String name) {
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
