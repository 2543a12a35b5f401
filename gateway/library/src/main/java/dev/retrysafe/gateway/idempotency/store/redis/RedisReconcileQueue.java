package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore.bytes;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore.recordKey;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.springframework.data.domain.Range;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The fleet's UNCERTAIN records to look up at their upstream, in Redis, laid out as the process queue is
 * ({@link RedisProcessQueue}, whose scripts it shares): per Cluster slot a sorted set
 * {@code idempotency-reconcile:{<slot tag>}} (scope hashes by when the lookup is due), written by the scripts that
 * make a record UNCERTAIN; a directory {@code idempotency-reconcile-slots} of the slots to look into and when,
 * brought forward after each such step; claims are leases. Settling is one compare-and-set script
 * ({@code idempotency_reconcile_settle.lua}).
 */
public final class RedisReconcileQueue implements ReconcileQueue {
    public static final String DIRECTORY_KEY = "idempotency-reconcile-slots";
    public static final String QUEUE_PREFIX = "idempotency-reconcile:";
    /** Held for the restore interval by the instance whose turn it is to restore the directory. */
    public static final String RESTORE_TURN_KEY = "idempotency-reconcile-slots:restore-turn";
    private static final int SLOTS_PER_CLAIM = 64;
    private static final List<String> RECORD_FIELDS = List.of("state", "owner", "uncertain_at", "route", "upstream",
            "lookup");

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> SLOTS = LuaScripts.load("idempotency_process_slots.lua", List.class);
    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> CLAIM = LuaScripts.load("idempotency_processes_claim.lua", List.class);
    private static final RedisScript<Long> SETTLE = LuaScripts.load("idempotency_reconcile_settle.lua", Long.class);

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final StoredResponseCodec responses;
    private final LookupValuesCodec values;
    private final Duration releasedOwnersTtl;
    private final SlotDirectory directory;

    /**
     * @param compressAbove     and {@code encryption}: as the store's, so a found answer is stored as a response is
     * @param releasedOwnersTtl how long, at least, a released record's owner stays fenced
     * @param cluster           a Redis Cluster: the slots' queues are read a master at a time to restore the
     *                          directory ({@link UnsettledIndex})
     */
    public RedisReconcileQueue(ReactiveRedisTemplate<String, byte[]> redis, int compressAbove,
            EncryptionKeys encryption, Duration releasedOwnersTtl, boolean cluster) {
        this.redis = redis;
        this.directory = new SlotDirectory(redis, new UnsettledIndex(redis, cluster), DIRECTORY_KEY, QUEUE_PREFIX,
                RESTORE_TURN_KEY);
        this.responses = new StoredResponseCodec(compressAbove, encryption);
        this.values = new LookupValuesCodec(encryption);
        this.releasedOwnersTtl = releasedOwnersTtl;
    }

    /** The records to look up of the slot a record lives in. */
    public static String queueKey(String scopeHash) {
        return QUEUE_PREFIX + "{" + SlotTags.sameSlotAs(scopeHash) + "}";
    }

    private static String queueKeyOfTag(String tag) {
        return QUEUE_PREFIX + "{" + tag + "}";
    }

    /** Look into the record's slot within {@code delay}: after a step that queued a lookup. */
    private Mono<Void> lookSoon(String scopeHash, Duration delay) {
        return redis.execute(SLOTS, List.of(DIRECTORY_KEY), soonerArgs(scopeHash, delay)).then();
    }

    /** The same, after a store step (reserve, mark uncertain) that queued one: over the store's own connection. */
    static Mono<Void> lookSoon(StoreConnection redis, String scopeHash, Duration delay) {
        return redis.run(RedisProcessQueue.SLOT_DIRECTORY, List.of(DIRECTORY_KEY), soonerArgs(scopeHash, delay))
                .then();
    }

    private static List<byte[]> soonerArgs(String scopeHash, Duration delay) {
        return List.of(bytes("sooner"), bytes(SlotTags.sameSlotAs(scopeHash)), millis(delay));
    }

    /**
     * As the process queue's: a lookup queued by the step that made its record UNCERTAIN is put back in the directory
     * when the directory's own write was lost with a Redis master ({@link SlotDirectory}).
     */
    @Override
    public Mono<Integer> restoreLostSlots(Duration interval) {
        return directory.restoreLostSlots(interval);
    }

    @Override
    public Flux<DueLookup> claimDue(int max, Duration claim) {
        return redis.execute(SLOTS, List.of(DIRECTORY_KEY),
                        List.of(bytes("claim"), bytes(Integer.toString(SLOTS_PER_CLAIM)), millis(claim)))
                .concatMapIterable(RedisReconcileQueue::claimedSlots)
                .concatMap(slot -> claimSlot(slot, max, claim));
    }

    private Flux<DueLookup> claimSlot(String[] slot, int max, Duration claim) {
        String queue = queueKeyOfTag(slot[0]);
        return redis.execute(CLAIM, List.of(queue), List.of(bytes(Integer.toString(max)), millis(claim))).next()
                .flatMapMany(reply -> {
                    List<String> scopes = new ArrayList<>();
                    for (int i = 2; i < reply.size(); i++) {
                        scopes.add(text(reply.get(i)));
                    }
                    // The slot's next look is its earliest entry, the claimed ones included (due again when their
                    // claim lapses): set before the lookups, which can only move entries later or out.
                    return lookNext(slot, queue).thenMany(Flux.fromIterable(scopes));
                })
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
            return run("found", due.owner(), since, due.scopeHash(), List.of(
                    responses.encode(found.response(), due.scopeHash()),
                    bytes(Integer.toString(found.response().status())), millis(found.retention()),
                    bytes("reconciler"), bytes(found.reason())))
                    .map(done -> done > 0);
        }
        if (result instanceof LookupResult.NotFound) {
            return run("not-found", due.owner(), since, due.scopeHash(), List.of(millis(releasedOwnersTtl)))
                    .map(done -> done > 0);
        }
        LookupResult.Failed failed = (LookupResult.Failed) result;
        return run("failed", due.owner(), since, due.scopeHash(),
                List.of(millis(failed.firstDelay()), millis(failed.maxDelay())))
                .flatMap(delay -> delay > 0
                        ? lookSoon(due.scopeHash(), Duration.ofMillis(delay)).onErrorComplete()
                                .thenReturn(true)
                        : Mono.just(false));
    }

    private Mono<Long> run(String op, String owner, String since, String scopeHash, List<byte[]> more) {
        List<byte[]> args = new ArrayList<>(List.of(bytes(op), bytes(owner), bytes(since), bytes(scopeHash)));
        args.addAll(more);
        return redis.execute(SETTLE, List.of(recordKey(scopeHash), UnsettledIndex.inFlightKey(scopeHash),
                        UnsettledIndex.uncertainKey(scopeHash), RedisIdempotencyStore.releasedOwnersKey(scopeHash),
                        queueKey(scopeHash)), args)
                .next();
    }

    private Mono<Void> lookNext(String[] slot, String queue) {
        return redis.opsForZSet().rangeWithScores(queue, Range.closed(0L, 0L)).next()
                .map(first -> Long.toString(first.getScore().longValue()))
                .defaultIfEmpty("")
                .flatMap(next -> redis.execute(SLOTS, List.of(DIRECTORY_KEY), List.of(bytes("next"),
                        bytes(slot[0]), bytes(slot[1]), bytes(next))).then());
    }

    private static List<String[]> claimedSlots(List<?> reply) {
        List<String[]> slots = new ArrayList<>();
        for (int i = 1; i + 1 < reply.size(); i += 2) {
            slots.add(new String[] {text(reply.get(i)), text(reply.get(i + 1))});
        }
        return slots;
    }

    private static String text(Object element) {
        if (element == null) {
            return "";
        }
        return element instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(element);
    }

    private static byte[] millis(Duration duration) {
        return bytes(Long.toString(Math.max(1, duration.toMillis())));
    }
}
