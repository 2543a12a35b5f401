package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.LOOKUPS;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.PROCESSES;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.bytes;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.inFlightKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.millis;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.processLinkKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.recordKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.releasedOwnersKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.slotTag;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.text;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.uncertainKey;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The fleet's UNCERTAIN records to look up at their upstream ({@link RedisFleetQueue}, keys
 * {@link RedisKeyspace#LOOKUPS}): per Cluster slot, scope hashes by when the lookup is due, queued by the scripts
 * that make a record UNCERTAIN. Settling is one compare-and-set script ({@code idempotency_reconcile_settle.lua}).
 */
public final class RedisReconcileQueue implements ReconcileQueue {
    private static final List<String> RECORD_FIELDS = List.of("state", "owner", "uncertain_at", "route", "upstream",
            "lookup");
    private static final RedisScript<Long> SETTLE = LuaScripts.load("idempotency_reconcile_settle.lua", Long.class);

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final StoredResponseCodec responses;
    private final LookupValuesCodec values;
    private final Duration releasedOwnersTtl;
    private final Duration firstProcessPoll;
    private final boolean cluster;
    private final RedisFleetQueue queue;
    /** For a found answer that names an unfinished process: its first poll is queued as a stored 202's is. */
    private final RedisFleetQueue processes;

    /**
     * @param compressAbove     and {@code encryption}: as the store's, so a found answer is stored as a response is
     * @param releasedOwnersTtl how long, at least, a released record's owner stays fenced
     * @param firstProcessPoll  when a found answer's unfinished process is first polled, as after a stored 202
     * @param cluster           a Redis Cluster: the slots' queues are read a master at a time to restore the
     *                          directory ({@link UnsettledIndex})
     */
    public RedisReconcileQueue(ReactiveRedisTemplate<String, byte[]> redis, int compressAbove,
            EncryptionKeys encryption, Duration releasedOwnersTtl, Duration firstProcessPoll, boolean cluster) {
        this.redis = redis;
        UnsettledIndex index = new UnsettledIndex(redis, cluster);
        this.queue = new RedisFleetQueue(redis, index, LOOKUPS);
        this.processes = new RedisFleetQueue(redis, index, PROCESSES);
        this.firstProcessPoll = firstProcessPoll;
        this.cluster = cluster;
        this.responses = new StoredResponseCodec(compressAbove, encryption);
        this.values = new LookupValuesCodec(encryption);
        this.releasedOwnersTtl = releasedOwnersTtl;
    }

    /** Look into the record's slot within {@code delay}: after a store step (reserve, mark uncertain) that queued one. */
    static Mono<Void> lookSoon(StoreConnection redis, String scopeHash, Duration delay) {
        return RedisFleetQueue.lookSoon(redis, LOOKUPS, scopeHash, delay);
    }

    /**
     * As the process queue's: a lookup queued by the step that made its record UNCERTAIN is put back in the directory
     * when the directory's own write was lost with a Redis master ({@link RedisFleetQueue}).
     */
    @Override
    public Mono<Integer> restoreLostSlots(Duration interval) {
        return queue.restoreLostSlots(interval);
    }

    @Override
    public Flux<DueLookup> claimDue(int max, Duration claim) {
        // The slot's next look is set before the lookups, which can only move entries later or out.
        return queue.claimDue(max, claim)
                .concatMap(batch -> queue.lookNext(batch).thenMany(Flux.fromIterable(batch.scopeHashes())))
                .concatMap(this::due);
    }

    private Mono<DueLookup> due(String scopeHash) {
        return redis.<String, byte[]>opsForHash().multiGet(recordKey(scopeHash), RECORD_FIELDS)
                .flatMap(fields -> {
                    Optional<DueLookup> due = dueLookup(scopeHash, fields);
                    if (due.isPresent()) {
                        return Mono.just(due.get());
                    }
                    // Settled, gone, or its values unreadable: it leaves the queue, unless it is UNCERTAIN anew.
                    String owner = text(fields.get(1));
                    String since = text(fields.get(2));
                    return run("drop", owner, since, scopeHash, List.of()).then(Mono.empty());
                });
    }

    private Optional<DueLookup> dueLookup(String scopeHash, List<byte[]> fields) {
        if (fields.size() < RECORD_FIELDS.size() || fields.stream().anyMatch(f -> f == null)
                || !"UNCERTAIN".equals(text(fields.get(0)))) {
            return Optional.empty();
        }
        long since;
        try {
            since = Long.parseLong(text(fields.get(2)));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
        return values.decode(fields.get(5), scopeHash).map(found -> new DueLookup(scopeHash, text(fields.get(3)),
                text(fields.get(4)), found, text(fields.get(1)), since));
    }

    @Override
    public Mono<Boolean> settle(DueLookup due, LookupResult result) {
        String since = Long.toString(due.uncertainSince());
        if (result instanceof LookupResult.Found found) {
            return settleFound(due, since, found);
        }
        if (result instanceof LookupResult.NotFound) {
            return run("not-found", due.owner(), since, due.scopeHash(), List.of(millis(releasedOwnersTtl)))
                    .map(done -> done > 0);
        }
        LookupResult.Failed failed = (LookupResult.Failed) result;
        return run("failed", due.owner(), since, due.scopeHash(),
                List.of(millis(failed.firstDelay()), millis(failed.maxDelay())))
                .flatMap(delay -> delay > 0
                        ? queue.lookSoon(due.scopeHash(), Duration.ofMillis(delay)).onErrorComplete()
                                .thenReturn(true)
                        : Mono.just(false));
    }

    /**
     * Completed from the answer; an unfinished process it names is queued for its polls and, on one Redis, linked and
     * its slot brought forward in the directory in the same step. On a Cluster the directory and the link live in
     * other slots: written around the step, as the store's complete does, and a failure of theirs costs nothing but
     * a later look (an unlinked process is still polled).
     */
    private Mono<Boolean> settleFound(DueLookup due, String since, LookupResult.Found found) {
        String scopeHash = due.scopeHash();
        List<byte[]> args = List.of(responses.encode(found.response(), scopeHash),
                bytes(Integer.toString(found.response().status())), millis(found.retention()), bytes("reconciler"),
                bytes(found.reason()), bytes(found.processId().orElse("")), millis(firstProcessPoll),
                bytes(slotTag(scopeHash)));
        if (found.processId().isEmpty()) {
            return run("found", due.owner(), since, scopeHash, args, List.of()).map(done -> done > 0);
        }
        String link = processLinkKey(due.routeId(), found.processId().get());
        if (!cluster) {
            return run("found", due.owner(), since, scopeHash, args, List.of(PROCESSES.directory(), link))
                    .map(done -> done > 0);
        }
        return processes.lookSoon(scopeHash, firstProcessPoll).onErrorComplete()
                .then(run("found", due.owner(), since, scopeHash, args, List.of()))
                .flatMap(done -> done <= 0 ? Mono.just(false)
                        : Mono.when(processes.lookSoon(scopeHash, firstProcessPoll).onErrorComplete(),
                                redis.opsForValue().set(link, bytes(scopeHash), found.retention()).onErrorComplete())
                                .thenReturn(true));
    }

    private Mono<Long> run(String op, String owner, String since, String scopeHash, List<byte[]> more) {
        return run(op, owner, since, scopeHash, more, List.of());
    }

    private Mono<Long> run(String op, String owner, String since, String scopeHash, List<byte[]> more,
            List<String> otherSlotKeys) {
        List<byte[]> args = new ArrayList<>(List.of(bytes(op), bytes(owner), bytes(since), bytes(scopeHash)));
        args.addAll(more);
        List<String> keys = new ArrayList<>(List.of(recordKey(scopeHash), inFlightKey(scopeHash),
                uncertainKey(scopeHash), releasedOwnersKey(scopeHash), LOOKUPS.queueKey(scopeHash),
                PROCESSES.queueKey(scopeHash)));
        keys.addAll(otherSlotKeys);
        return redis.execute(SETTLE, keys, args).next();
    }
}
