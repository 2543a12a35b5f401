package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.bytes;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.slotTag;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.FleetQueueKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
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
    private static final int SLOTS_PER_CLAIM = 64;
    /** Slots put back in one call to the directory. */
    private static final int SLOTS_PER_RESTORE = 500;

    private final Supplier<StoreConnection> redis;
    private final UnsettledIndex index;
    private final FleetQueueKeys keys;

    RedisFleetQueue(Supplier<StoreConnection> redis, UnsettledIndex index, FleetQueueKeys keys) {
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
        return StoreConnection.run(redis, new StoreScripts.SlotsClaim(keys.directory(), SLOTS_PER_CLAIM, claim))
                .flatMapIterable(RedisFleetQueue::claimedSlots)
                .concatMap(slot -> StoreConnection.run(redis,
                                new StoreScripts.Claim(keys.queueKeyOfTag(slot[0]), max, claim))
                        .map(reply -> new ClaimedBatch(slot[0], slot[1], reply.scopeHashes())));
    }

    /**
     * The slot's next look: its earliest entry (claimed ones included, due again when their claim lapses), or out of
     * the directory when it is empty. Done only if nobody brought the slot forward since the claim (work queued
     * meanwhile keeps its sooner look).
     */
    Mono<Void> lookNext(ClaimedBatch batch) {
        return StoreConnection.on(redis, c -> c.lowestScore(keys.queueKeyOfTag(batch.tag())))
                .map(first -> Long.toString(first.longValue()))
                .defaultIfEmpty("")
                .flatMap(next -> StoreConnection.run(redis,
                        new StoreScripts.SlotsNext(keys.directory(), batch.tag(), batch.claimedScore(), next)).then());
    }

    /** Look into the record's slot within {@code delay}: after a step that queued work in it. */
    Mono<Void> lookSoon(String scopeHash, Duration delay) {
        return StoreConnection.on(redis, c -> lookSoon(c, keys, scopeHash, delay));
    }

    /** The same around a store step, on the connection the step ran on. */
    static Mono<Void> lookSoon(StoreConnection redis, FleetQueueKeys keys, String scopeHash, Duration delay) {
        return redis.run(new StoreScripts.SlotsSooner(keys.directory(), slotTag(scopeHash), delay)).then();
    }

    /** Restores if it is this instance's turn in the interval; emits how many slots had been lost (0: not its turn). */
    Mono<Integer> restoreLostSlots(Duration interval) {
        // Held a little less than the interval: the instance that took the turn finds it free when it asks again one
        // interval later, so the fleet restores about once per interval, never twice.
        return StoreConnection.on(redis,
                        c -> c.setIfAbsent(keys.restoreTurn(), bytes("1"), interval.minus(interval.dividedBy(10))))
                .flatMap(myTurn -> myTurn ? restoreLostSlotsNow() : Mono.just(0));
    }

    /** The restore itself, whoever's turn it is. */
    Mono<Integer> restoreLostSlotsNow() {
        return index.queuedSlots(keys.queuePrefix())
                .buffer(SLOTS_PER_RESTORE)
                .concatMap(slots -> {
                    List<String> tagAndTime = new ArrayList<>(slots.size() * 2);
                    for (UnsettledIndex.QueuedSlot slot : slots) {
                        tagAndTime.add(slot.tag());
                        tagAndTime.add(Long.toString(slot.earliestPoll()));
                    }
                    return StoreConnection.run(redis, new StoreScripts.SlotsRestore(keys.directory(), tagAndTime));
                })
                .reduce(0, Integer::sum);
    }

    /** The directory's claim reply: tag and claimed score of each slot. */
    private static List<String[]> claimedSlots(StoreScripts.SlotsClaim.Reply reply) {
        List<String> pairs = reply.tagAndScore();
        List<String[]> slots = new ArrayList<>();
        for (int i = 0; i + 1 < pairs.size(); i += 2) {
            slots.add(new String[] {pairs.get(i), pairs.get(i + 1)});
        }
        return slots;
    }
}
