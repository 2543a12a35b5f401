package dev.retrysafe.gateway.idempotency.store.redis;

import io.lettuce.core.cluster.SlotHash;
import java.util.Arrays;
import java.util.List;

/**
 * For each of Redis Cluster's 16,384 slots, a short hash tag that lands in it. A key of the fleet's shared indexes
 * (pending processes, unsettled records, wake-up channels) carries the tag of the slot its records live in, so that
 * the Lua script changing a record can change the index in the same atomic step: a script may only touch keys of
 * one slot. On a single Redis the slots mean nothing and cost nothing; the same keys are used everywhere so that
 * one code path is tested.
 */
public final class SlotTags {
    public static final int SLOTS = SlotHash.SLOT_COUNT;
    private static final String[] TAGS = tags();

    private SlotTags() {
    }

    /** The tag of the slot {@code hashTagContent} (the text between a key's braces) lands in. */
    public static String sameSlotAs(String hashTagContent) {
        return TAGS[SlotHash.getSlot(hashTagContent)];
    }

    /** The tag of a slot, 0 to 16,383. */
    public static String ofSlot(int slot) {
        return TAGS[slot];
    }

    /** Every slot's tag, by slot. */
    public static List<String> all() {
        return Arrays.asList(TAGS.clone());
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
}
