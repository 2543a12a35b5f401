package dev.retrysafe.gateway.idempotency.store.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * One call of a store script with its keys and arguments named: a record of {@link StoreScripts} whose components
 * are, in order, the script's KEYS and then its ARGV, as the script's header lists them on its {@code -- keys:} and
 * {@code -- argv:} lines (a script of several operations has an {@code -- argv <operation>:} line for each, the
 * operation being ARGV[1]; its record puts it there). {@code ScriptContractTest} holds each record to its header:
 * the names (a component's in snake case, {@code _ms} added for a {@link Duration}), the order, and that {@link #keys()}
 * and {@link #args()} write every component where its name says. Encodings: text as UTF-8, a {@link Duration} as its
 * milliseconds (at least 1), a flag as {@code '1'} or {@code '0'}, a number in decimal, a {@link WakeUp} as its three
 * values, a list as its elements (a name ending in {@code ...}), a missing optional key or value (in brackets in the
 * header) as nothing or as {@code ''}.
 *
 * @param <R> the reply: a record of its elements by name (the header's {@code -- reply:} line), or the script's
 *            number or text
 */
interface ScriptCall<R> {

    LuaScript script();

    List<String> keys();

    List<byte[]> args();

    /**
     * The reply as Lettuce decoded it for {@link LuaScript#output()}, read by name; a script's number (INTEGER) or
     * list of values (MULTI) as it is.
     */
    @SuppressWarnings("unchecked")
    default R reply(Object reply) {
        return (R) reply;
    }

    /**
     * The three wake-up arguments of a settling script: the channel, the message (the record's scope hash) and
     * whether to {@code SPUBLISH} it ({@link WakeUpChannel}).
     */
    record WakeUp(String channel, String message, boolean sharded) {
    }

    static byte[] text(String value) {
        return value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
    }

    static byte[] millis(Duration duration) {
        return duration == null ? new byte[0] : RedisKeyspace.millis(duration);
    }

    static byte[] flag(boolean value) {
        return text(value ? "1" : "0");
    }

    static byte[] number(long value) {
        return text(Long.toString(value));
    }
}
