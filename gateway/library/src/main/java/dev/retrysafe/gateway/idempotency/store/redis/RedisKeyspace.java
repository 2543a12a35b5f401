package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * Every name the gateway gives a Redis key or channel, and the conversions of what goes in and out of them: nothing
 * else in the adapter builds one. A name is part of the stored format (see the stored-format fixtures): instances of
 * the release before read and write the same keys during a rollout.
 *
 * <p>Keys of one record (the record, its released owners) share the record's hash tag, its scope hash. The fleet's
 * shared indexes (pending processes, lookups, unsettled records, shard channels) are kept per Redis Cluster slot,
 * each key tagged with a short hash tag that lands in the slot its records live in, so that the Lua script changing a
 * record can change the index in the same atomic step: a script may only touch keys of one slot. On a single Redis
 * the slots mean nothing and cost nothing; the same keys are used everywhere so that one code path is tested.
 */
public final class RedisKeyspace {
    public static final int SLOTS = SlotHash.SLOT_COUNT;
    public static final String RECORD_PREFIX = "idempotency:";
    public static final String RELEASED_OWNERS_PREFIX = "idempotency-released-owners:";
    /** A process link: {@code idempotency-process:<operation>:<process id>} holds its record's scope hash. */
    public static final String PROCESS_LINK_PREFIX = "idempotency-process:";
    public static final String IN_FLIGHT_PREFIX = "idempotency-in-flight:";
    public static final String UNCERTAIN_PREFIX = "idempotency-uncertain:";
    /** Set once the records of a version without the unsettled index have been put in it: the fleet does that once. */
    public static final String UNSETTLED_BACKFILLED_KEY = "idempotency-unsettled-index:backfilled";
    /** One per master ({@link RedisMemoryWatch}): its disappearance says the master forgot its data. */
    public static final String MEMORY_MARKER_PREFIX = "idempotency-memory:";
    /**
     * A near cache's probe ({@link NearCache}): a key it reads and then writes, a minute at most, to see that Redis
     * reports changes to it.
     */
    public static final String NEAR_CACHE_PROBE_PREFIX = "idempotency-near-cache-probe:";
    /** Wake-ups before Redis 7, received by every instance. */
    public static final String CLASSIC_CHANNEL = "idempotency:settled";
    public static final String SHARD_CHANNEL_PREFIX = "idempotency:settled:";
    /** The pending processes, polled at their upstream. */
    public static final FleetQueueKeys PROCESSES = new FleetQueueKeys("idempotency-process-slots",
            "idempotency-processes:");
    /** The UNCERTAIN records to look up at their upstream. */
    public static final FleetQueueKeys LOOKUPS = new FleetQueueKeys("idempotency-reconcile-slots",
            "idempotency-reconcile:");

    private static final String[] TAGS = tags();

    private RedisKeyspace() {
    }

    public static String recordKey(IdempotencyScope scope) {
        return recordKey(scope.hash());
    }

    public static String recordKey(String scopeHash) {
        return RECORD_PREFIX + "{" + scopeHash + "}";
    }

    /**
     * The owners released from the scope (a hash: owner token to how it was released), whose late reserve or
     * complete is refused.
     */
    public static String releasedOwnersKey(String scopeHash) {
        return RELEASED_OWNERS_PREFIX + "{" + scopeHash + "}";
    }

    /** By the record's operation (the route id, on a route that names none, as before operations existed). */
    public static String processLinkKey(String operation, String processId) {
        return PROCESS_LINK_PREFIX + operation + ":" + processId;
    }

    /** The IN_FLIGHT records of the slot a record lives in, by when they were reserved. */
    public static String inFlightKey(String scopeHash) {
        return IN_FLIGHT_PREFIX + "{" + slotTag(scopeHash) + "}";
    }

    /** The UNCERTAIN records of the slot a record lives in, by when they became so. */
    public static String uncertainKey(String scopeHash) {
        return UNCERTAIN_PREFIX + "{" + slotTag(scopeHash) + "}";
    }

    static String nearCacheProbeKey(String instance) {
        return NEAR_CACHE_PROBE_PREFIX + instance;
    }

    static String memoryMarkerKey(String slotTag) {
        return MEMORY_MARKER_PREFIX + "{" + slotTag + "}";
    }

    static String shardChannelOfTag(String tag) {
        return SHARD_CHANNEL_PREFIX + "{" + tag + "}";
    }

    /** The slot tag of a shard channel, or null for any other channel. */
    static String tagOfShardChannel(String channel) {
        return channel.startsWith(SHARD_CHANNEL_PREFIX + "{") && channel.endsWith("}")
                ? channel.substring(SHARD_CHANNEL_PREFIX.length() + 1, channel.length() - 1)
                : null;
    }

    /** The tag of the slot {@code hashTagContent} (the text between a key's braces, a scope hash) lands in. */
    public static String slotTag(String hashTagContent) {
        return TAGS[SlotHash.getSlot(hashTagContent)];
    }

    /** The tag of a slot, 0 to 16,383. */
    public static String slotTagOf(int slot) {
        return TAGS[slot];
    }

    /** Every slot's tag, by slot. */
    public static List<String> allSlotTags() {
        return Arrays.asList(TAGS.clone());
    }

    static byte[] bytes(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }

    /** A reply element as text: bulk strings are UTF-8, integers their digits, a missing one empty. */
    static String text(Object element) {
        if (element == null) {
            return "";
        }
        return element instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(element);
    }

    /** A duration as the scripts take it: whole milliseconds, at least 1 (0 would mean "no expiry" to PEXPIRE). */
    static byte[] millis(Duration duration) {
        return bytes(Long.toString(Math.max(1, duration.toMillis())));
    }

    /** The shortest base-36 strings, in order, until every slot has one (about 160,000 CRC16s, once). */
    private static String[] tags() {
        String[] tags = new String[SLOTS];
        int found = 0;
        for (long n = 0; found < SLOTS; n++) {
            String candidate = Long.toString(n, 36);
            int slot = SlotHash.getSlot(candidate);
            if (tags[slot] == null) {
                tags[slot] = candidate;
                found++;
            }
        }
        return tags;
    }

    /**
     * A fleet queue's keys: its directory ({@code directory}, a sorted set of the slots to look into and when), each
     * slot's queue ({@code queuePrefix{<slot tag>}}, scope hashes by when they are due), and the turn to restore the
     * directory ({@code directory:restore-turn}, held for an interval by the instance whose turn it is).
     */
    public record FleetQueueKeys(String directory, String queuePrefix) {
        public String restoreTurn() {
            return directory + ":restore-turn";
        }

        /** The queue of the slot a record lives in. */
        public String queueKey(String scopeHash) {
            return queueKeyOfTag(slotTag(scopeHash));
        }

        public String queueKeyOfTag(String tag) {
            return queuePrefix + "{" + tag + "}";
        }
    }
}
