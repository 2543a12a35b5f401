package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.LOOKUPS;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.PROCESSES;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.bytes;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.inFlightKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.processLinkKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.recordKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.releasedOwnersKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.slotTag;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.text;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.uncertainKey;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
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
    private final Supplier<StoreConnection> redis;
    private final StoredResponseCodec responses;
    private final LookupValuesCodec values;
    private final Duration releasedOwnersTtl;
    private final Duration firstProcessPoll;
    private final boolean cluster;
    private final RedisFleetQueue queue;
    /** For a found answer that names an unfinished process: its first poll is queued as a stored 202's is. */
    private final RedisFleetQueue processes;

    /**
     * @param redis             the store's connection ({@link PreopenedConnections#store()})
     * @param template          Spring Data's, for a Cluster's topology (the directory's restore reads the slots by
     *                          master)
     * @param compressAbove     and {@code encryption}: as the store's, so a found answer is stored as a response is
     * @param releasedOwnersTtl how long, at least, a released record's owner stays fenced
     * @param firstProcessPoll  when a found answer's unfinished process is first polled, as after a stored 202
     * @param cluster           a Redis Cluster: the slots' queues are read a master at a time to restore the
     *                          directory ({@link UnsettledIndex})
     */
    public RedisReconcileQueue(Supplier<StoreConnection> redis, ReactiveRedisTemplate<String, byte[]> template,
            int compressAbove, EncryptionKeys encryption, Duration releasedOwnersTtl, Duration firstProcessPoll,
            boolean cluster) {
        this.redis = redis;
        UnsettledIndex index = new UnsettledIndex(redis, template, cluster);
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
        return StoreConnection.on(redis, c -> c.hmget(recordKey(scopeHash), RECORD_FIELDS))
                .flatMap(fields -> {
                    Optional<DueLookup> due = dueLookup(scopeHash, fields);
                    if (due.isPresent()) {
                        return Mono.just(due.get());
                    }
                    // Settled, gone, or its values unreadable: it leaves the queue, unless it is UNCERTAIN anew.
                    String owner = text(fields.get(1));
                    String since = text(fields.get(2));
                    return StoreConnection.run(redis, new StoreScripts.SettleDrop(slotKeys(scopeHash), owner, since,
                            scopeHash)).then(Mono.empty());
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
            return StoreConnection.run(redis, new StoreScripts.SettleNotFound(slotKeys(due.scopeHash()), due.owner(),
                    since, due.scopeHash(), releasedOwnersTtl)).map(done -> done > 0);
        }
        LookupResult.Failed failed = (LookupResult.Failed) result;
        return StoreConnection.run(redis, new StoreScripts.SettleFailed(slotKeys(due.scopeHash()), due.owner(), since,
                        due.scopeHash(), failed.firstDelay(), failed.maxDelay()))
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
        if (found.processId().isEmpty()) {
            return settleFound(due, since, found, null, null).map(done -> done > 0);
        }
        String link = processLinkKey(due.routeId(), found.processId().get());
        if (!cluster) {
            return settleFound(due, since, found, PROCESSES.directory(), link).map(done -> done > 0);
        }
        return processes.lookSoon(scopeHash, firstProcessPoll).onErrorComplete()
                .then(settleFound(due, since, found, null, null))
                .flatMap(done -> done <= 0 ? Mono.just(false)
                        : Mono.when(processes.lookSoon(scopeHash, firstProcessPoll).onErrorComplete(),
                                StoreConnection.on(redis, c -> c.set(link, bytes(scopeHash), found.retention()))
                                        .onErrorComplete())
                                .thenReturn(true));
    }

    /** @param directory and {@code link}: written in the same step (one Redis), or null (a Cluster, or no process) */
    private Mono<Long> settleFound(DueLookup due, String since, LookupResult.Found found, String directory,
            String link) {
        String scopeHash = due.scopeHash();
        return StoreConnection.run(redis, new StoreScripts.SettleFound(slotKeys(scopeHash), directory, link,
                due.owner(), since, scopeHash, responses.encode(found.response(), scopeHash),
                found.response().status(), found.retention(), "reconciler", found.reason(),
                found.processId().orElse(""), firstProcessPoll, slotTag(scopeHash)));
    }

    /** The keys of the record's slot a settle by lookup names. */
    private static StoreScripts.SettleKeys slotKeys(String scopeHash) {
        return new StoreScripts.SettleKeys(recordKey(scopeHash), inFlightKey(scopeHash), uncertainKey(scopeHash),
                releasedOwnersKey(scopeHash), LOOKUPS.queueKey(scopeHash), PROCESSES.queueKey(scopeHash));
    }
}
