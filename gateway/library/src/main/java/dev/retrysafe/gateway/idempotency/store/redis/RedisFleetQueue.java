package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.bytes;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.millis;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.slotTag;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.text;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.FleetQueueKeys;
import io.lettuce.core.ScriptOutputType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.data.domain.Range;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A queue of work the whole fleet shares, kept per Redis Cluster slot: the pending processes to poll and the
 * UNCERTAIN records to look up are two of them, configured by their {@link FleetQueueKeys}. Each slot has its own
 * sorted set of scope hashes by when they are due, written by the same scripts that change the records of that slot
 * (see {@link RedisKeyspace}): no key is hot, and the step that queues work does it atomically with the record. A
 * directory holds the slots that have work and when to look into each: brought forward around each step that queues
 * work (before it: a gateway dying right after the step has already said where to look; after it: a look racing the
 * step cannot drop the slot), set to the slot's earliest entry after each look, and the slot leaves it when it is
 * empty. Claims, of slots and of entries, are leases: nothing is lost with the instance holding them.
 *
 * <p>The directory is one key written in calls of its own: a write to it can be lost (refused while its master is
 * down, or acknowledged and not yet replicated when that master fails over) while the step itself queued the work in
 * its slot. {@link #restoreLostSlots} puts back every slot that holds work at its earliest due time, or brings it
 * forward to it, once per interval for the whole fleet.
 */
final class RedisFleetQueue {
    /** The directory's script ({@code idempotency_process_slots.lua}, shared by every fleet queue). */
    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> SLOTS = LuaScripts.load("idempotency_process_slots.lua", List.class);
    /** The same script, run by the store over its own connection around its steps. */
    private static final LuaScript SLOTS_ON_STORE = LuaScripts.script("idempotency_process_slots.lua",
            ScriptOutputType.MULTI);
    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> CLAIM = LuaScripts.load("idempotency_processes_claim.lua", List.class);
    private static final int SLOTS_PER_CLAIM = 64;
    /** Slots put back in one call to the directory. */
    private static final int SLOTS_PER_RESTORE = 500;

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final UnsettledIndex index;
    private final FleetQueueKeys keys;

    RedisFleetQueue(ReactiveRedisTemplate<String, byte[]> redis, UnsettledIndex index, FleetQueueKeys keys) {
        this.redis = redis;
        this.index = index;
        this.keys = keys;
    }

    /** The entries claimed in one slot, whose next look {@link #lookNext} sets. */
    record ClaimedBatch(String tag, String claimedScore, List<String> scopeHashes) {
    }

    /**
     * Claims up to {@value #SLOTS_PER_CLAIM} slots the directory says are due, and in each up to {@code max} due
     * entries, each claim lasting {@code claim}; one batch per slot, an empty one when its entries were not due.
     */
    Flux<ClaimedBatch> claimDue(int max, Duration claim) {
        return redis.execute(SLOTS, List.of(keys.directory()),
                        List.of(bytes("claim"), bytes(Integer.toString(SLOTS_PER_CLAIM)), millis(claim)))
                .concatMapIterable(RedisFleetQueue::claimedSlots)
                .concatMap(slot -> redis.execute(CLAIM, List.of(keys.queueKeyOfTag(slot[0])),
                                List.of(bytes(Integer.toString(max)), millis(claim))).next()
                        .map(reply -> {
                            List<String> scopes = new ArrayList<>();
                            for (int i = 2; i < reply.size(); i++) {
                                scopes.add(text(reply.get(i)));
                            }
                            return new ClaimedBatch(slot[0], slot[1], scopes);
                        }));
    }

    /**
     * The slot's next look: its earliest entry (claimed ones included, due again when their claim lapses), or out of
     * the directory when it is empty. Done only if nobody brought the slot forward since the claim (work queued
     * meanwhile keeps its sooner look).
     */
    Mono<Void> lookNext(ClaimedBatch batch) {
        return redis.opsForZSet().rangeWithScores(keys.queueKeyOfTag(batch.tag()), Range.closed(0L, 0L)).next()
                .map(first -> Long.toString(first.getScore().longValue()))
                .defaultIfEmpty("")
                .flatMap(next -> redis.execute(SLOTS, List.of(keys.directory()), List.of(bytes("next"),
                        bytes(batch.tag()), bytes(batch.claimedScore()), bytes(next))).then());
    }

    /** Look into the record's slot within {@code delay}: after a step that queued work in it. */
    Mono<Void> lookSoon(String scopeHash, Duration delay) {
        return redis.execute(SLOTS, List.of(keys.directory()), soonerArgs(scopeHash, delay)).then();
    }

    /** The same around a store step, over the store's own connection. */
    static Mono<Void> lookSoon(StoreConnection redis, FleetQueueKeys keys, String scopeHash, Duration delay) {
        return redis.run(SLOTS_ON_STORE, List.of(keys.directory()), soonerArgs(scopeHash, delay)).then();
    }

    private static List<byte[]> soonerArgs(String scopeHash, Duration delay) {
        return List.of(bytes("sooner"), bytes(slotTag(scopeHash)), millis(delay));
    }

    /** Restores if it is this instance's turn in the interval; emits how many slots had been lost (0: not its turn). */
    Mono<Integer> restoreLostSlots(Duration interval) {
        // Held a little less than the interval: the instance that took the turn finds it free when it asks again one
        // interval later, so the fleet restores about once per interval, never twice.
        return redis.opsForValue().setIfAbsent(keys.restoreTurn(), bytes("1"), interval.minus(interval.dividedBy(10)))
                .flatMap(myTurn -> myTurn ? restoreLostSlotsNow() : Mono.just(0));
    }

    /** The restore itself, whoever's turn it is. */
    Mono<Integer> restoreLostSlotsNow() {
        return index.queuedSlots(keys.queuePrefix())
                .buffer(SLOTS_PER_RESTORE)
                .concatMap(slots -> {
                    List<byte[]> args = new ArrayList<>();
                    args.add(bytes("restore"));
                    for (UnsettledIndex.QueuedSlot slot : slots) {
                        args.add(bytes(slot.tag()));
                        args.add(bytes(Long.toString(slot.earliestPoll())));
                    }
                    return redis.execute(SLOTS, List.of(keys.directory()), args).next()
                            .map(reply -> (int) Long.parseLong(text(reply.get(0))));
                })
                .reduce(0, Integer::sum);
    }

    /** The directory's claim reply: its time, then tag and claimed score of each slot. */
    private static List<String[]> claimedSlots(List<?> reply) {
        List<String[]> slots = new ArrayList<>();
        for (int i = 1; i + 1 < reply.size(); i += 2) {
            slots.add(new String[] {text(reply.get(i)), text(reply.get(i + 1))});
        }
        return slots;
    }
}
