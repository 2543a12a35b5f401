package dev.retrysafe.gateway.idempotency.store.redis;

import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A store script as {@link StoreConnection} runs it: its body (for {@code EVAL} when a master answers
 * {@code NOSCRIPT}), its SHA1 (for {@code EVALSHA}, computed once) and the type of its reply.
 */
record LuaScript(String name, String body, String sha1, ScriptOutputType output) {

    static LuaScript of(String name, String body, ScriptOutputType output) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-1").digest(body.getBytes(StandardCharsets.UTF_8));
            return new LuaScript(name, body, HexFormat.of().formatHex(digest), output);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is missing from this JVM", e);
        }
    }
}
