package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore.bytes;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Mono;

/**
 * The directory of a fleet queue kept per Cluster slot (the pending processes, the lookups at the upstream): one
 * sorted set of the slots to look into and when. It is one key, written in calls of their own around the steps that
 * queue work: a write to it can be lost (refused while its master is down, or acknowledged and not yet replicated
 * when that master fails over) while the step itself queued the work in its slot. {@link #restoreLostSlots} puts
 * back every slot that holds work at its earliest due time, or brings it forward to it, once per interval for the
 * whole fleet.
 */
final class SlotDirectory {
    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> SLOTS = LuaScripts.load("idempotency_process_slots.lua", List.class);
    /** Slots put back in one call to the directory. */
    private static final int SLOTS_PER_RESTORE = 500;

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final UnsettledIndex index;
    private final String directoryKey;
    private final String queuePrefix;
    private final String restoreTurnKey;

    /**
     * @param queuePrefix    the slots' queues, up to the slot tag's brace ({@code idempotency-processes:})
     * @param restoreTurnKey held for an interval by the instance whose turn it is to restore
     */
    SlotDirectory(ReactiveRedisTemplate<String, byte[]> redis, UnsettledIndex index, String directoryKey,
            String queuePrefix, String restoreTurnKey) {
        this.redis = redis;
        this.index = index;
        this.directoryKey = directoryKey;
        this.queuePrefix = queuePrefix;
        this.restoreTurnKey = restoreTurnKey;
    }

    /** Restores if it is this instance's turn in the interval; emits how many slots had been lost (0: not its turn). */
    Mono<Integer> restoreLostSlots(Duration interval) {
        // Held a little less than the interval: the instance that took the turn finds it free when it asks again one
        // interval later, so the fleet restores about once per interval, never twice.
        return redis.opsForValue().setIfAbsent(restoreTurnKey, bytes("1"), interval.minus(interval.dividedBy(10)))
                .flatMap(myTurn -> myTurn ? restoreLostSlotsNow() : Mono.just(0));
    }

    /** The restore itself, whoever's turn it is. */
    Mono<Integer> restoreLostSlotsNow() {
        return index.queuedSlots(queuePrefix)
                .buffer(SLOTS_PER_RESTORE)
                .concatMap(slots -> {
                    List<byte[]> args = new ArrayList<>();
                    args.add(bytes("restore"));
                    for (UnsettledIndex.QueuedSlot slot : slots) {
                        args.add(bytes(slot.tag()));
                        args.add(bytes(Long.toString(slot.earliestPoll())));
                    }
                    return redis.execute(SLOTS, List.of(directoryKey), args).next()
                            .map(reply -> (int) Long.parseLong(text(reply.get(0))));
                })
                .reduce(0, Integer::sum);
    }

    private static String text(Object element) {
        return element instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(element);
    }
}
