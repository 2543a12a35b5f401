package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.UNSETTLED_BACKFILLED_KEY;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.UNCERTAIN_PREFIX;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.IN_FLIGHT_PREFIX;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.uncertainKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.inFlightKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.text;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.bytes;

import dev.retrysafe.gateway.idempotency.operator.RecordAges;
import dev.retrysafe.gateway.idempotency.operator.RecordCounts;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.data.redis.connection.ReactiveRedisClusterConnection;
import org.springframework.data.redis.connection.RedisClusterNode;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.ScanOptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The index of unsettled records: per Cluster slot, {@code idempotency-in-flight:{<slot tag>}} and
 * {@code idempotency-uncertain:{<slot tag>}} (scope hashes by when they entered the state), kept by the same scripts
 * that change a record's state, beside the slot's pending processes ({@link RedisProcessQueue}). Counts and the
 * operator's queue read these instead of every record: their cost follows the number of unsettled records and the
 * 16,384 slots, never the number of records. On a single Redis a call covers {@link #SLOTS_PER_CALL} slots; on a
 * Cluster see {@link Reads}.
 */
final class UnsettledIndex {
    private static final Logger log = LoggerFactory.getLogger(UnsettledIndex.class);
    static final int SLOTS_PER_CALL = 1024;
    private static final int CALLS_IN_FLIGHT = 32;
    /** Calls of slot runs at once on a Cluster; a run read slot by slot has {@link #CALLS_IN_FLIGHT} of its own. */
    private static final int RUNS_IN_FLIGHT = 8;
    private static final String RECORD_PREFIX = RedisKeyspace.RECORD_PREFIX + "{";

    private final Supplier<StoreConnection> redis;
    /** Spring Data's, for what is not a call on one key: SCAN over every master, and a Cluster's topology. */
    private final ReactiveRedisTemplate<String, byte[]> template;
    private final Reads reads;
    private final AtomicBoolean backfilled = new AtomicBoolean();
    /** Set once Redis refused the by-master script as such (no script flags before Redis 7): slot by slot after. */
    private final AtomicBoolean byMasterRefused = new AtomicBoolean();

    /** @param cluster a Redis Cluster: read {@link Reads#BY_MASTER}, else {@link Reads#SINGLE_REDIS} */
    UnsettledIndex(Supplier<StoreConnection> redis, ReactiveRedisTemplate<String, byte[]> template, boolean cluster) {
        this(redis, template, cluster ? Reads.BY_MASTER : Reads.SINGLE_REDIS);
    }

    UnsettledIndex(Supplier<StoreConnection> redis, ReactiveRedisTemplate<String, byte[]> template, Reads reads) {
        this.redis = redis;
        this.template = template;
        this.reads = reads;
    }

    /** How a count or list reads the 16,384 slots' parts of the index: the slots one script call covers. */
    enum Reads {
        /** A single Redis, where the slots mean nothing: {@link #SLOTS_PER_CALL} slots a call. */
        SINGLE_REDIS,
        /** A Redis Cluster where a script may touch the keys of one slot only (Redis 6): one call per slot. */
        SLOT_BY_SLOT,
        /**
         * A Redis Cluster of Redis 7 or later: a script flagged {@code allow-cross-slot-keys} reads up to
         * {@link #SLOTS_PER_CALL} consecutive slots of one master a call (by the client's view of the topology), so a
         * read costs a few calls per master. Where such a call fails (its slots are no longer all that master's, a
         * slot is being moved, Redis refuses the script) its slots are read {@link #SLOT_BY_SLOT}, so a result is
         * always complete; a Redis that does not know script flags is read slot by slot from then on.
         */
        BY_MASTER
    }

    /**
     * IN_FLIGHT, UNCERTAIN, pending (IN_FLIGHT reserved more than {@code pendingAfter} ago) and pending processes,
     * over every slot, with the age of the oldest of each kind by each master's clock. The COMPLETED count is not
     * known here.
     */
    Mono<RecordCounts> count(Duration pendingAfter) {
        return backfilled().thenMany(calls("count", pendingAfter.toMillis(), RedisKeyspace.PROCESSES.queuePrefix()))
                .reduce(new long[7], (sum, reply) -> {
                    // Counts add up; of the ages (ms), the oldest is kept.
                    for (int i = 0; i < 4; i++) {
                        sum[i] += Long.parseLong(text(reply.get(i)));
                    }
                    for (int i = 4; i < 7; i++) {
                        sum[i] = Math.max(sum[i], Long.parseLong(text(reply.get(i))));
                    }
                    return sum;
                })
                .map(sum -> new RecordCounts(sum[0], sum[1], OptionalLong.empty(), sum[2], sum[3],
                        new RecordAges(Duration.ofMillis(sum[4]), Duration.ofMillis(sum[5]),
                                Duration.ofMillis(sum[6]))));
    }

    /** The scope hashes of up to {@code perState} IN_FLIGHT and UNCERTAIN records, oldest first within a slot. */
    Flux<Member> list(int perState) {
        return backfilled().thenMany(calls("list", perState, RedisKeyspace.PROCESSES.queuePrefix()))
                .concatMapIterable(reply -> {
                    // {IN_FLIGHT..., '', UNCERTAIN...}, or that once per slot, each closed by another '' (by master).
                    List<Member> members = new ArrayList<>();
                    boolean inFlight = true;
                    for (Object element : reply) {
                        String scope = text(element);
                        if (scope.isEmpty()) {
                            inFlight = !inFlight;
                        } else {
                            members.add(new Member(scope, inFlight ? "IN_FLIGHT" : "UNCERTAIN"));
                        }
                    }
                    return members;
                });
    }

    /**
     * The slots whose queue of {@code queuePrefix} (the pending processes of {@link RedisProcessQueue}, the lookups
     * of {@link RedisReconcileQueue}) is not empty, each with its earliest due time: what that queue's directory must
     * name. Read as a count is, so it costs a few calls per master.
     */
    Flux<QueuedSlot> queuedSlots(String queuePrefix) {
        return calls("processes", 0, queuePrefix)
                .concatMapIterable(reply -> {
                    List<QueuedSlot> slots = new ArrayList<>();
                    for (int i = 0; i + 1 < reply.size(); i += 2) {
                        String key = text(reply.get(i));
                        String tag = key.substring(queuePrefix.length() + 1, key.length() - 1);
                        slots.add(new QueuedSlot(tag, (long) Double.parseDouble(text(reply.get(i + 1)))));
                    }
                    return slots;
                });
    }

    /**
     * Records left IN_FLIGHT or UNCERTAIN by a version without the index are put in it, once for the fleet: the
     * first count or list after an upgrade reads every record key (SCAN) and marks it done; later ones, on any
     * instance, find the mark. Records settled meanwhile are left out.
     */
    private Mono<Void> backfilled() {
        if (backfilled.get()) {
            return Mono.empty();
        }
        return StoreConnection.on(redis, c -> c.exists(UNSETTLED_BACKFILLED_KEY))
                .flatMap(done -> done ? Mono.<Void>empty() : backfill())
                .then(Mono.fromRunnable(() -> backfilled.set(true)));
    }

    private Mono<Void> backfill() {
        ScanOptions records = ScanOptions.scanOptions().match(RedisKeyspace.RECORD_PREFIX + "{*").count(1000)
                .build();
        return template.scan(records)
                .flatMap(key -> {
                    String scopeHash = key.substring(RedisKeyspace.RECORD_PREFIX.length() + 1, key.length() - 1);
                    return StoreConnection.run(redis, new StoreScripts.Backfill(key, inFlightKey(scopeHash),
                            uncertainKey(scopeHash), scopeHash));
                }, 16)
                .reduce(0L, Long::sum)
                .flatMap(added -> {
                    if (added > 0) {
                        log.info("Index of unsettled records: {} records left unsettled by an earlier version added",
                                added);
                    }
                    return StoreConnection.on(redis, c -> c.set(UNSETTLED_BACKFILLED_KEY, bytes("1")));
                })
                .then();
    }

    /**
     * One reply per call, in slot order: what the slots' parts of the index say, as the scripts return it.
     *
     * @param operation   and {@code limit}: as {@link StoreScripts.Unsettled}
     * @param queuePrefix the per-slot queue read beside the two indexes (the scripts' third key of a slot)
     */
    private Flux<List<Object>> calls(String operation, long limit, String queuePrefix) {
        Args args = new Args(operation, limit);
        List<String> tags = RedisKeyspace.allSlotTags();
        return switch (reads) {
            case SINGLE_REDIS -> slotCalls(tags, SLOTS_PER_CALL, args, queuePrefix);
            case SLOT_BY_SLOT -> slotCalls(tags, 1, args, queuePrefix);
            case BY_MASTER -> byMasterRefused.get() ? slotCalls(tags, 1, args, queuePrefix)
                    : runs().flatMapMany(runs -> Flux.fromIterable(runs).flatMapSequential(run -> {
                        List<String> runTags = tags.subList(run.from(), run.to());
                        return run.master() == null ? slotCalls(runTags, 1, args, queuePrefix)
                                : masterCall(runTags, args, queuePrefix)
                                        .onErrorResume(e -> slotBySlot(run, runTags, args, queuePrefix, e));
                    }, RUNS_IN_FLIGHT));
        };
    }

    /** What a count, list or processes call asks, whichever script reads it. */
    private record Args(String operation, long limit) {
    }

    private Flux<List<Object>> slotCalls(List<String> tags, int slotsPerCall, Args args, String queuePrefix) {
        return Flux.range(0, (tags.size() + slotsPerCall - 1) / slotsPerCall)
                .flatMapSequential(call -> {
                    List<String> keys = new ArrayList<>();
                    for (String tag : tags.subList(call * slotsPerCall,
                            Math.min(tags.size(), (call + 1) * slotsPerCall))) {
                        keys.add(IN_FLIGHT_PREFIX + "{" + tag + "}");
                        keys.add(UNCERTAIN_PREFIX + "{" + tag + "}");
                        keys.add(queuePrefix + "{" + tag + "}");
                    }
                    return StoreConnection.run(redis,
                            new StoreScripts.Unsettled(keys, args.operation(), RECORD_PREFIX, args.limit()));
                }, CALLS_IN_FLIGHT);
    }

    /** The slots of {@code tags}, all of one master, in one call routed by the first slot's key. */
    private Flux<List<Object>> masterCall(List<String> tags, Args args, String queuePrefix) {
        return StoreConnection.run(redis, new StoreScripts.UnsettledByMaster(IN_FLIGHT_PREFIX + "{" + tags.get(0) + "}",
                args.operation(), RECORD_PREFIX, args.limit(), IN_FLIGHT_PREFIX + "{", UNCERTAIN_PREFIX + "{",
                queuePrefix + "{", tags)).flux();
    }

    private Flux<List<Object>> slotBySlot(Run run, List<String> tags, Args args, String queuePrefix,
            Throwable failure) {
        if (refusedAsScript(failure) && byMasterRefused.compareAndSet(false, true)) {
            log.info("Index of unsettled records: Redis refused the script that reads many slots of a master at once "
                    + "(script flags need Redis 7): read one slot per call from now on ({})", failure.toString());
        } else {
            log.debug("Index of unsettled records: slots {} to {} of {} read one per call ({})", run.from(),
                    run.to() - 1, run.master(), NestedExceptionUtils.getMostSpecificCause(failure).toString());
        }
        return slotCalls(tags, 1, args, queuePrefix);
    }

    /** A Redis before 7 reads the shebang line as Lua, and fails to compile the script. */
    private static boolean refusedAsScript(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            String message = String.valueOf(cause.getMessage());
            if (message.contains("Error compiling script") || message.contains("shebang")) {
                return true;
            }
        }
        return false;
    }

    /** The client's view of which master owns each slot (Lettuce's topology, no round trip), as runs of slots. */
    private Mono<List<Run>> runs() {
        return Flux.usingWhen(Mono.fromSupplier(() -> template.getConnectionFactory().getReactiveClusterConnection()),
                        ReactiveRedisClusterConnection::clusterGetNodes, ReactiveRedisClusterConnection::closeLater)
                .filter(RedisClusterNode::isMaster)
                .collectList()
                .map(UnsettledIndex::runs)
                .onErrorResume(e -> {
                    log.debug("Index of unsettled records: no topology, read one slot per call ({})", e.toString());
                    return Mono.just(List.of(new Run(0, RedisKeyspace.SLOTS, null)));
                });
    }

    /**
     * Consecutive slots of one master, at most {@link #SLOTS_PER_CALL} each, in slot order: the reply order of the
     * per-slot reading, whose list is cut by the caller. A master owns a few ranges after Redis's own resharding and
     * rebalancing, so this is a few runs per master; a slot no master is known to own is a run of its own.
     */
    static List<Run> runs(List<RedisClusterNode> masters) {
        String[] owners = new String[RedisKeyspace.SLOTS];
        for (RedisClusterNode master : masters) {
            String name = master.getId() != null ? master.getId() : master.asString();
            for (int slot : master.getSlotRange().getSlotsArray()) {
                owners[slot] = name;
            }
        }
        List<Run> runs = new ArrayList<>();
        int from = 0;
        for (int slot = 1; slot <= RedisKeyspace.SLOTS; slot++) {
            if (slot == RedisKeyspace.SLOTS || slot - from == SLOTS_PER_CALL || owners[slot] == null
                    || !Objects.equals(owners[slot], owners[from])) {
                runs.add(new Run(from, slot, owners[from]));
                from = slot;
            }
        }
        return runs;
    }

    /** Slots {@code from} (inclusive) to {@code to} (exclusive) of {@code master}, or of no known master if null. */
    record Run(int from, int to, String master) {
    }

    /** A slot of the process queue that holds pending processes, and the earliest one's poll time (epoch ms). */
    record QueuedSlot(String tag, long earliestPoll) {
    }

    /** An unsettled record in the index. */
    record Member(String scopeHash, String state) {
    }
}
