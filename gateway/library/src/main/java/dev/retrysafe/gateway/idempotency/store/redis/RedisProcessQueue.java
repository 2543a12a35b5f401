package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore.bytes;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore.recordKey;

import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import org.springframework.data.domain.Range;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The fleet's queue of pending processes in Redis. Each Cluster slot has its own sorted set,
 * {@code idempotency-processes:{<slot tag>}}, scope hashes by next poll time, written by the same scripts that
 * change the records of that slot (see {@link SlotTags}); no key is hot, and the step that stores a 202 queues its
 * process atomically. A directory, {@code idempotency-process-slots}, holds the slots that have pending processes
 * and when to look into each: brought forward just before and just after a 202 naming a process is stored (before:
 * so that a gateway dying right after the store step has already said where to look; after: so that a look racing
 * the store step cannot drop the slot), set to the slot's earliest poll after each look, and the slot leaves it
 * when it is empty. Claims are leases: nothing is lost with the instance holding them. The directory's own writes
 * can be lost with a Redis master: {@link #restoreLostSlots(Duration)} rebuilds what it lacks from the slots.
 */
public final class RedisProcessQueue implements ProcessQueue {
    public static final String DIRECTORY_KEY = "idempotency-process-slots";
    public static final String PENDING_PREFIX = "idempotency-processes:";
    /** Held for the restore interval by the instance whose turn it is to restore the directory. */
    public static final String RESTORE_TURN_KEY = "idempotency-process-slots:restore-turn";
    private static final int SLOTS_PER_CLAIM = 64;
    private static final List<String> RECORD_FIELDS = List.of("route", "upstream", "process_id", "process_state");

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> SLOTS = LuaScripts.load("idempotency_process_slots.lua", List.class);
    /**
     * The same script, run by the store over its own connection; also for the reconcile queue's directory, which it
     * serves the same way.
     */
    static final LuaScript SLOT_DIRECTORY = LuaScripts.script("idempotency_process_slots.lua",
            ScriptOutputType.MULTI);
    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> CLAIM = LuaScripts.load("idempotency_processes_claim.lua", List.class);
    private static final RedisScript<Long> POLL_LATER = LuaScripts.load("idempotency_process_poll_later.lua", Long.class);
    /** The store's own script for a process that ended (a status read through the gateway runs it there). */
    private static final RedisScript<Long> PROCESS_ENDED = LuaScripts.load("idempotency_process_ended.lua", Long.class);

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final SlotDirectory directory;

    /** On a single Redis. */
    public RedisProcessQueue(ReactiveRedisTemplate<String, byte[]> redis) {
        this(redis, false);
    }

    /** @param cluster a Redis Cluster: the slots' queues are read a master at a time ({@link UnsettledIndex}) */
    public RedisProcessQueue(ReactiveRedisTemplate<String, byte[]> redis, boolean cluster) {
        this.redis = redis;
        this.directory = new SlotDirectory(redis, new UnsettledIndex(redis, cluster), DIRECTORY_KEY, PENDING_PREFIX,
                RESTORE_TURN_KEY);
    }

    /** The pending processes of the slot a record lives in. */
    public static String pendingKey(String scopeHash) {
        return pendingKeyOfTag(SlotTags.sameSlotAs(scopeHash));
    }

    static String pendingKeyOfTag(String tag) {
        return PENDING_PREFIX + "{" + tag + "}";
    }

    /**
     * Look into the record's slot within {@code delay}: called around the store step of a 202 naming a process, on a
     * Cluster, over the store's own connection.
     */
    static Mono<Void> lookSoon(StoreConnection redis, String scopeHash, Duration delay) {
        return redis.run(SLOT_DIRECTORY, List.of(DIRECTORY_KEY),
                List.of(bytes("sooner"), bytes(SlotTags.sameSlotAs(scopeHash)), millis(delay))).then();
    }

    @Override
    public Mono<Integer> pollDue(int max, Duration claim, Duration maxDelay,
            Function<DueProcess, Mono<PollResult>> poll) {
        return redis.execute(SLOTS, List.of(DIRECTORY_KEY),
                        List.of(bytes("claim"), bytes(Integer.toString(SLOTS_PER_CLAIM)), millis(claim)))
                .concatMapIterable(RedisProcessQueue::claimedSlots)
                .flatMap(slot -> pollSlot(slot, max, claim, maxDelay, poll), 4)
                .reduce(0, Integer::sum);
    }

    /**
     * The directory's writes around the store step can be lost with a Redis master while the 202's own step queued the
     * process in its slot: every slot that holds processes is put back at its earliest poll ({@link SlotDirectory}).
     */
    @Override
    public Mono<Integer> restoreLostSlots(Duration interval) {
        return directory.restoreLostSlots(interval);
    }

    /** The restore itself, whoever's turn it is. */
    Mono<Integer> restoreLostSlotsNow() {
        return directory.restoreLostSlotsNow();
    }

    private Mono<Integer> pollSlot(ClaimedSlot slot, int max, Duration claim, Duration maxDelay,
            Function<DueProcess, Mono<PollResult>> poll) {
        String pending = pendingKeyOfTag(slot.tag());
        return redis.execute(CLAIM, List.of(pending), List.of(bytes(Integer.toString(max)), millis(claim))).next()
                .flatMap(reply -> {
                    long now = Long.parseLong(text(reply.get(0)));
                    List<String> scopes = new ArrayList<>();
                    for (int i = 2; i < reply.size(); i++) {
                        scopes.add(text(reply.get(i)));
                    }
                    return Flux.fromIterable(scopes)
                            .flatMap(scope -> pollOne(scope, maxDelay, poll), 8)
                            .then(lookNext(slot, pending))
                            .thenReturn(scopes.size());
                });
    }

    private Mono<Void> pollOne(String scopeHash, Duration maxDelay, Function<DueProcess, Mono<PollResult>> poll) {
        return redis.<String, byte[]>opsForHash().multiGet(recordKey(scopeHash), RECORD_FIELDS)
                .flatMap(fields -> {
                    Optional<DueProcess> due = dueProcess(scopeHash, fields);
                    if (due.isEmpty()) {
                        // Gone with its TTL, ended, or replaced by a later record: it leaves the queue.
                        return pollLater(scopeHash, "", maxDelay);
                    }
                    return Mono.defer(() -> poll.apply(due.get()))
                            .onErrorReturn(PollResult.RUNNING)
                            .defaultIfEmpty(PollResult.RUNNING)
                            .flatMap(result -> result instanceof PollResult.Ended ended
                                    ? ended(due.get(), ended)
                                    : pollLater(scopeHash, due.get().processId(), maxDelay));
                });
    }

    private Mono<Void> ended(DueProcess due, PollResult.Ended ended) {
        return redis.execute(PROCESS_ENDED,
                        List.of(recordKey(due.scopeHash()), pendingKey(due.scopeHash())),
                        List.of(bytes(due.processId()), bytes(ended.status()), millis(ended.retention()),
                                bytes(due.scopeHash())))
                .then();
    }

    private Mono<Void> pollLater(String scopeHash, String processId, Duration maxDelay) {
        return redis.execute(POLL_LATER, List.of(recordKey(scopeHash), pendingKey(scopeHash)),
                List.of(bytes(processId), millis(maxDelay), bytes(scopeHash))).then();
    }

    /**
     * The slot's next look: its earliest pending poll, or out of the directory when it is empty. Done only if
     * nobody brought the slot forward since the claim (a 202 stored meanwhile keeps its sooner look).
     */
    private Mono<Void> lookNext(ClaimedSlot slot, String pending) {
        return redis.opsForZSet().rangeWithScores(pending, Range.closed(0L, 0L)).next()
                .map(first -> Long.toString(first.getScore().longValue()))
                .defaultIfEmpty("")
                .flatMap(next -> redis.execute(SLOTS, List.of(DIRECTORY_KEY), List.of(bytes("next"),
                        bytes(slot.tag()), bytes(slot.claimedScore()), bytes(next))).then());
    }

    private static Optional<DueProcess> dueProcess(String scopeHash, List<byte[]> fields) {
        if (fields.size() < 4 || fields.stream().anyMatch(f -> f == null)
                || !"PENDING".equals(new String(fields.get(3), StandardCharsets.UTF_8))) {
            return Optional.empty();
        }
        return Optional.of(new DueProcess(scopeHash, new String(fields.get(0), StandardCharsets.UTF_8),
                new String(fields.get(2), StandardCharsets.UTF_8), new String(fields.get(1), StandardCharsets.UTF_8)));
    }

    private static List<ClaimedSlot> claimedSlots(List<?> reply) {
        List<ClaimedSlot> slots = new ArrayList<>();
        for (int i = 1; i + 1 < reply.size(); i += 2) {
            slots.add(new ClaimedSlot(text(reply.get(i)), text(reply.get(i + 1))));
        }
        return slots;
    }

    private static String text(Object element) {
        return element instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(element);
    }

    private static byte[] millis(Duration duration) {
        return bytes(Long.toString(Math.max(1, duration.toMillis())));
    }

    private record ClaimedSlot(String tag, String claimedScore) {
    }
}
