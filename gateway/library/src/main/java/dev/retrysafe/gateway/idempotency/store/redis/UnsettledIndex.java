package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore.bytes;

import dev.retrysafe.gateway.idempotency.operator.RecordCounts;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.ScanOptions;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The index of unsettled records: per Cluster slot, {@code idempotency-in-flight:{<slot tag>}} and
 * {@code idempotency-uncertain:{<slot tag>}} (scope hashes by when they entered the state), kept by the same scripts
 * that change a record's state, beside the slot's pending processes ({@link RedisProcessQueue}). Counts and the
 * operator's queue read these instead of every record: their cost follows the number of unsettled records and the
 * 16,384 slots, never the number of records. On a Cluster a script may touch one slot, so each slot is one call
 * (pipelined); on a single Redis a call covers {@link #SLOTS_PER_CALL} slots.
 */
final class UnsettledIndex {
    private static final Logger log = LoggerFactory.getLogger(UnsettledIndex.class);
    static final String IN_FLIGHT_PREFIX = "idempotency-in-flight:";
    static final String UNCERTAIN_PREFIX = "idempotency-uncertain:";
    static final int SLOTS_PER_CALL = 1024;
    private static final int CALLS_IN_FLIGHT = 32;
    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> UNSETTLED = LuaScripts.load("idempotency_unsettled.lua", List.class);
    private static final RedisScript<Long> BACKFILL = LuaScripts.load("idempotency_unsettled_backfill.lua", Long.class);
    private static final byte[] RECORD_PREFIX = bytes(RedisIdempotencyStore.KEY_PREFIX + "{");
    /** Set once the records of a version without the index have been put in it: the fleet does that once. */
    static final String BACKFILLED_KEY = "idempotency-unsettled-index:backfilled";

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final int slotsPerCall;
    private final AtomicBoolean backfilled = new AtomicBoolean();

    /** @param oneSlotPerCall a Redis Cluster: a script may only touch the keys of one slot */
    UnsettledIndex(ReactiveRedisTemplate<String, byte[]> redis, boolean oneSlotPerCall) {
        this.redis = redis;
        this.slotsPerCall = oneSlotPerCall ? 1 : SLOTS_PER_CALL;
    }

    static String inFlightKey(String scopeHash) {
        return IN_FLIGHT_PREFIX + "{" + SlotTags.sameSlotAs(scopeHash) + "}";
    }

    static String uncertainKey(String scopeHash) {
        return UNCERTAIN_PREFIX + "{" + SlotTags.sameSlotAs(scopeHash) + "}";
    }

    /**
     * IN_FLIGHT, UNCERTAIN, pending (IN_FLIGHT reserved more than {@code pendingAfter} ago) and pending processes,
     * over every slot. The COMPLETED count is not known here.
     */
    Mono<RecordCounts> count(Duration pendingAfter) {
        return backfilled().thenMany(calls(List.of(bytes("count"), RECORD_PREFIX,
                        bytes(Long.toString(pendingAfter.toMillis())))))
                .reduce(new long[4], (sum, reply) -> {
                    for (int i = 0; i < 4; i++) {
                        sum[i] += Long.parseLong(text(reply.get(i)));
                    }
                    return sum;
                })
                .map(sum -> new RecordCounts(sum[0], sum[1], OptionalLong.empty(), sum[2], sum[3]));
    }

    /** The scope hashes of up to {@code perState} IN_FLIGHT and UNCERTAIN records, oldest first within a slot. */
    Flux<Member> list(int perState) {
        return backfilled().thenMany(calls(List.of(bytes("list"), RECORD_PREFIX, bytes(Integer.toString(perState)))))
                .concatMapIterable(reply -> {
                    List<Member> members = new ArrayList<>();
                    String state = "IN_FLIGHT";
                    for (Object element : reply) {
                        String scope = text(element);
                        if (scope.isEmpty()) {
                            state = "UNCERTAIN";
                        } else {
                            members.add(new Member(scope, state));
                        }
                    }
                    return members;
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
        return redis.hasKey(BACKFILLED_KEY).flatMap(done -> done ? Mono.<Void>empty() : backfill())
                .then(Mono.fromRunnable(() -> backfilled.set(true)));
    }

    private Mono<Void> backfill() {
        ScanOptions records = ScanOptions.scanOptions().match(RedisIdempotencyStore.KEY_PREFIX + "{*").count(1000)
                .build();
        return redis.scan(records)
                .flatMap(key -> {
                    String scopeHash = key.substring(RedisIdempotencyStore.KEY_PREFIX.length() + 1, key.length() - 1);
                    return redis.execute(BACKFILL, List.of(key, inFlightKey(scopeHash), uncertainKey(scopeHash)),
                            List.of(bytes(scopeHash))).next();
                }, 16)
                .reduce(0L, Long::sum)
                .flatMap(added -> {
                    if (added > 0) {
                        log.info("Index of unsettled records: {} records left unsettled by an earlier version added",
                                added);
                    }
                    return redis.opsForValue().set(BACKFILLED_KEY, bytes("1"));
                })
                .then();
    }

    @SuppressWarnings("unchecked")
    private Flux<List<Object>> calls(List<byte[]> args) {
        List<String> tags = SlotTags.all();
        return Flux.range(0, (tags.size() + slotsPerCall - 1) / slotsPerCall)
                .flatMapSequential(call -> {
                    List<String> keys = new ArrayList<>();
                    for (String tag : tags.subList(call * slotsPerCall,
                            Math.min(tags.size(), (call + 1) * slotsPerCall))) {
                        keys.add(IN_FLIGHT_PREFIX + "{" + tag + "}");
                        keys.add(UNCERTAIN_PREFIX + "{" + tag + "}");
                        keys.add(RedisProcessQueue.pendingKeyOfTag(tag));
                    }
                    return redis.execute(UNSETTLED, keys, args).next().map(reply -> (List<Object>) reply);
                }, CALLS_IN_FLIGHT);
    }

    private static String text(Object element) {
        return element instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(element);
    }

    /** An unsettled record in the index. */
    record Member(String scopeHash, String state) {
    }
}
