package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.ScriptCall.flag;
import static dev.retrysafe.gateway.idempotency.store.redis.ScriptCall.millis;
import static dev.retrysafe.gateway.idempotency.store.redis.ScriptCall.number;
import static dev.retrysafe.gateway.idempotency.store.redis.ScriptCall.text;

import io.lettuce.core.ScriptOutputType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Every store script and the record of its call ({@link ScriptCall}): the contract between the Java side and the Lua
 * side, by name, in one place. Each script is read once ({@link LuaScripts}) and run by SHA on the store's connection
 * ({@link StoreConnection#run(ScriptCall)}).
 */
final class StoreScripts {
    static final LuaScript RESERVE = script("idempotency_reserve.lua", ScriptOutputType.MULTI);
    static final LuaScript COMPLETE = script("idempotency_complete.lua", ScriptOutputType.INTEGER);
    static final LuaScript RELEASE = script("idempotency_release.lua", ScriptOutputType.INTEGER);
    static final LuaScript RENEW = script("idempotency_renew.lua", ScriptOutputType.INTEGER);
    static final LuaScript UNCERTAIN = script("idempotency_uncertain.lua", ScriptOutputType.INTEGER);
    static final LuaScript PROCESS_ENDED = script("idempotency_process_ended.lua", ScriptOutputType.INTEGER);
    static final LuaScript POLL_LATER = script("idempotency_process_poll_later.lua", ScriptOutputType.INTEGER);
    static final LuaScript SLOTS = script("idempotency_process_slots.lua", ScriptOutputType.MULTI);
    static final LuaScript CLAIM = script("idempotency_processes_claim.lua", ScriptOutputType.MULTI);
    static final LuaScript RECONCILE_SETTLE = script("idempotency_reconcile_settle.lua", ScriptOutputType.INTEGER);
    static final LuaScript OPERATOR_RELEASE = script("idempotency_operator_release.lua", ScriptOutputType.VALUE);
    static final LuaScript OPERATOR_COMPLETE = script("idempotency_operator_complete.lua", ScriptOutputType.VALUE);
    static final LuaScript MEMORY_MARKER = script("idempotency_memory_marker.lua", ScriptOutputType.VALUE);
    static final LuaScript UNSETTLED = script("idempotency_unsettled.lua", ScriptOutputType.MULTI);
    static final LuaScript UNSETTLED_BY_MASTER = script("idempotency_unsettled_by_master.lua", ScriptOutputType.MULTI);
    static final LuaScript BACKFILL = script("idempotency_unsettled_backfill.lua", ScriptOutputType.INTEGER);
    static final LuaScript PROBE = script("idempotency_probe.lua", ScriptOutputType.INTEGER);

    private StoreScripts() {
    }

    private static LuaScript script(String name, ScriptOutputType output) {
        return LuaScripts.script(name, output);
    }

    // The record's own steps, on every request.

    record Reserve(String record, String inFlight, String uncertain, String releasedOwners, String lookups,
            String fingerprint, String owner, Duration lease, boolean willWait, String operation, String tenantHash,
            String upstream, Duration recordTtl, boolean retakeUncertain, ScriptCall.WakeUp wakeUp, String method,
            String path, byte[] lookupValues, Duration lookupDelay, String strictFingerprint, String rules,
            String routeId) implements ScriptCall<Reserve.Reply> {

        /** A taken record's reply; a reservation's is its state alone ({@code RESERVED}, {@code FENCED}). */
        record Reply(String state, String fingerprint, byte[] response, String processState, String lookup,
                String strict, String rules) {

            /** Whether this call queued the record's lookup at its upstream (its lease had lapsed). */
            boolean lookupQueued() {
                return "LOOKUP".equals(lookup);
            }
        }

        @Override
        public LuaScript script() {
            return RESERVE;
        }

        @Override
        public List<String> keys() {
            return List.of(record, inFlight, uncertain, releasedOwners, lookups);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(fingerprint), text(owner), millis(lease), flag(willWait), text(operation),
                    text(tenantHash), text(upstream), millis(recordTtl), flag(retakeUncertain),
                    text(wakeUp.channel()), text(wakeUp.message()), flag(wakeUp.sharded()), text(method), text(path),
                    lookupValues == null ? new byte[0] : lookupValues, millis(lookupDelay), text(strictFingerprint),
                    text(rules), text(routeId));
        }

        @Override
        public Reply reply(Object reply) {
            List<?> elements = (List<?>) reply;
            return new Reply(textAt(elements, 0), textAt(elements, 1), bytesAt(elements, 2), textAt(elements, 3),
                    textAt(elements, 4), textAt(elements, 5), textAt(elements, 6));
        }
    }

    /** Returns 1 stored, 2 stored anew, 3 already stored by this owner, 0 not this owner's, -1 fenced. */
    record Complete(String record, String processes, String inFlight, String uncertain, String releasedOwners,
            String directory, String link, String owner, byte[] response, int status, Duration ttl, String processId,
            ScriptCall.WakeUp wakeUp, String identity, Duration firstPoll, String slotTag)
            implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return COMPLETE;
        }

        @Override
        public List<String> keys() {
            return directory == null ? List.of(record, processes, inFlight, uncertain, releasedOwners)
                    : List.of(record, processes, inFlight, uncertain, releasedOwners, directory, link);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(owner), response, number(status), millis(ttl), text(processId),
                    text(wakeUp.channel()), text(wakeUp.message()), flag(wakeUp.sharded()), text(identity),
                    millis(firstPoll), text(slotTag));
        }
    }

    /** Returns 1 released, 2 already released by this owner, 0 not this owner's. */
    record Release(String record, String releasedOwners, String inFlight, String uncertain, String owner,
            ScriptCall.WakeUp wakeUp, Duration releasedOwnersTtl) implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return RELEASE;
        }

        @Override
        public List<String> keys() {
            return List.of(record, releasedOwners, inFlight, uncertain);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(owner), text(wakeUp.channel()), text(wakeUp.message()), flag(wakeUp.sharded()),
                    millis(releasedOwnersTtl));
        }
    }

    /** Returns 1 renewed, 0 not this owner's. */
    record Renew(String record, String owner, Duration lease) implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return RENEW;
        }

        @Override
        public List<String> keys() {
            return List.of(record);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(owner), millis(lease));
        }
    }

    /** Returns 1 marked, 3 and queued for a lookup, 2 already marked, 4 written anew, 5 and queued, 0 not owner's. */
    record Uncertain(String record, String inFlight, String uncertain, String lookups, String releasedOwners,
            String owner, String reason, Duration ttl, ScriptCall.WakeUp wakeUp, String identity,
            byte[] lookupValues, Duration lookupDelay) implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return UNCERTAIN;
        }

        @Override
        public List<String> keys() {
            return List.of(record, inFlight, uncertain, lookups, releasedOwners);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(owner), text(reason), millis(ttl), text(wakeUp.channel()), text(wakeUp.message()),
                    flag(wakeUp.sharded()), text(identity), lookupValues == null ? new byte[0] : lookupValues,
                    millis(lookupDelay));
        }
    }

    // Pending processes.

    /** Returns 1 recorded now, 0 not this record's pending process. */
    record ProcessEnded(String record, String processes, String processId, String status, Duration retention,
            String scopeHash) implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return PROCESS_ENDED;
        }

        @Override
        public List<String> keys() {
            return List.of(record, processes);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(processId), text(status), millis(retention), text(scopeHash));
        }
    }

    /** Returns the next delay in ms, 0 when the process left the queue. */
    record PollLater(String record, String processes, String processId, Duration maxDelay, String scopeHash)
            implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return POLL_LATER;
        }

        @Override
        public List<String> keys() {
            return List.of(record, processes);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(processId), millis(maxDelay), text(scopeHash));
        }
    }

    // A fleet queue's directory and slots.

    record SlotsClaim(String directory, int mostSlots, Duration lease) implements ScriptCall<SlotsClaim.Reply> {

        /** Redis's time, then the tag and claimed score of each slot claimed. */
        record Reply(String now, List<String> tagAndScore) {
        }

        @Override
        public LuaScript script() {
            return SLOTS;
        }

        @Override
        public List<String> keys() {
            return List.of(directory);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text("claim"), number(mostSlots), millis(lease));
        }

        @Override
        public Reply reply(Object reply) {
            List<?> elements = (List<?>) reply;
            return new Reply(textAt(elements, 0), textsFrom(elements, 1));
        }
    }

    record SlotsSooner(String directory, String tag, Duration delay) implements ScriptCall<Object> {

        @Override
        public LuaScript script() {
            return SLOTS;
        }

        @Override
        public List<String> keys() {
            return List.of(directory);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text("sooner"), text(tag), millis(delay));
        }
    }

    /** @param nextLook absolute ms, {@code ''} when the slot was empty (it leaves the directory) */
    record SlotsNext(String directory, String tag, String claimedScore, String nextLook)
            implements ScriptCall<Object> {

        @Override
        public LuaScript script() {
            return SLOTS;
        }

        @Override
        public List<String> keys() {
            return List.of(directory);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text("next"), text(tag), text(claimedScore), text(nextLook));
        }
    }

    /** @param tagAndTime pairs of a slot's tag and its earliest due time (absolute ms); replies how many were lost */
    record SlotsRestore(String directory, List<String> tagAndTime) implements ScriptCall<Integer> {

        @Override
        public LuaScript script() {
            return SLOTS;
        }

        @Override
        public List<String> keys() {
            return List.of(directory);
        }

        @Override
        public List<byte[]> args() {
            List<byte[]> args = new ArrayList<>(tagAndTime.size() + 1);
            args.add(text("restore"));
            tagAndTime.forEach(value -> args.add(text(value)));
            return args;
        }

        @Override
        public Integer reply(Object reply) {
            return Integer.parseInt(textAt((List<?>) reply, 0));
        }
    }

    record Claim(String queue, int most, Duration lease) implements ScriptCall<Claim.Reply> {

        /** @param earliest the earliest due time left in the slot, {@code ''} when it is empty */
        record Reply(String now, String earliest, List<String> scopeHashes) {
        }

        @Override
        public LuaScript script() {
            return CLAIM;
        }

        @Override
        public List<String> keys() {
            return List.of(queue);
        }

        @Override
        public List<byte[]> args() {
            return List.of(number(most), millis(lease));
        }

        @Override
        public Reply reply(Object reply) {
            List<?> elements = (List<?>) reply;
            return new Reply(textAt(elements, 0), textAt(elements, 1), textsFrom(elements, 2));
        }
    }

    // Settling an UNCERTAIN record by its lookup: one script, four operations, the same keys.

    /** The keys every settle by lookup names: the record's, all in its slot. */
    record SettleKeys(String record, String inFlight, String uncertain, String releasedOwners, String lookups,
            String processes) {

        List<String> list() {
            return List.of(record, inFlight, uncertain, releasedOwners, lookups, processes);
        }
    }

    /** Returns 1 done, 0 the record is no longer as claimed. */
    record SettleFound(SettleKeys slot, String directory, String link, String owner, String uncertainAt,
            String scopeHash, byte[] response, int status, Duration retention, String who, String why,
            String processId, Duration firstPoll, String slotTag) implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return RECONCILE_SETTLE;
        }

        @Override
        public List<String> keys() {
            List<String> keys = new ArrayList<>(slot.list());
            if (directory != null) {
                keys.add(directory);
                keys.add(link);
            }
            return keys;
        }

        @Override
        public List<byte[]> args() {
            return List.of(text("found"), text(owner), text(uncertainAt), text(scopeHash), response, number(status),
                    millis(retention), text(who), text(why), text(processId), millis(firstPoll), text(slotTag));
        }
    }

    /** Returns 1 done, 0 the record is no longer as claimed. */
    record SettleNotFound(SettleKeys slot, String owner, String uncertainAt, String scopeHash,
            Duration releasedOwnersTtl) implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return RECONCILE_SETTLE;
        }

        @Override
        public List<String> keys() {
            return slot.list();
        }

        @Override
        public List<byte[]> args() {
            return List.of(text("not-found"), text(owner), text(uncertainAt), text(scopeHash),
                    millis(releasedOwnersTtl));
        }
    }

    /** Returns the delay in ms until the next lookup, 0 the record is no longer as claimed. */
    record SettleFailed(SettleKeys slot, String owner, String uncertainAt, String scopeHash, Duration firstDelay,
            Duration maxDelay) implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return RECONCILE_SETTLE;
        }

        @Override
        public List<String> keys() {
            return slot.list();
        }

        @Override
        public List<byte[]> args() {
            return List.of(text("failed"), text(owner), text(uncertainAt), text(scopeHash), millis(firstDelay),
                    millis(maxDelay));
        }
    }

    /** The claimed record cannot be looked up: it leaves the queue. Returns 1 done, 0 no longer as claimed. */
    record SettleDrop(SettleKeys slot, String owner, String uncertainAt, String scopeHash)
            implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return RECONCILE_SETTLE;
        }

        @Override
        public List<String> keys() {
            return slot.list();
        }

        @Override
        public List<byte[]> args() {
            return List.of(text("drop"), text(owner), text(uncertainAt), text(scopeHash));
        }
    }

    // The operator's steps.

    /** Returns the state the record was in, or {@code ABSENT}. */
    record OperatorRelease(String record, String inFlight, String uncertain, String releasedOwners,
            ScriptCall.WakeUp wakeUp, Duration releasedOwnersTtl) implements ScriptCall<String> {

        @Override
        public LuaScript script() {
            return OPERATOR_RELEASE;
        }

        @Override
        public List<String> keys() {
            return List.of(record, inFlight, uncertain, releasedOwners);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(wakeUp.channel()), text(wakeUp.message()), flag(wakeUp.sharded()),
                    millis(releasedOwnersTtl));
        }

        @Override
        public String reply(Object reply) {
            return RedisKeyspace.text(reply);
        }
    }

    /** Returns the state the record was in, or {@code ABSENT}. */
    record OperatorComplete(String record, String inFlight, String uncertain, byte[] response, int status,
            Duration retention, String who, String why, ScriptCall.WakeUp wakeUp) implements ScriptCall<String> {

        @Override
        public LuaScript script() {
            return OPERATOR_COMPLETE;
        }

        @Override
        public List<String> keys() {
            return List.of(record, inFlight, uncertain);
        }

        @Override
        public List<byte[]> args() {
            return List.of(response, number(status), millis(retention), text(who), text(why),
                    text(wakeUp.channel()), text(wakeUp.message()), flag(wakeUp.sharded()));
        }

        @Override
        public String reply(Object reply) {
            return RedisKeyspace.text(reply);
        }
    }

    // The store's own upkeep.

    /** Returns the marker's epoch: {@code epoch} when this call wrote it. */
    record MemoryMarker(String marker, String epoch) implements ScriptCall<String> {

        @Override
        public LuaScript script() {
            return MEMORY_MARKER;
        }

        @Override
        public List<String> keys() {
            return List.of(marker);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(epoch));
        }

        @Override
        public String reply(Object reply) {
            return RedisKeyspace.text(reply);
        }
    }

    /**
     * @param slotKeys per slot its IN_FLIGHT index, UNCERTAIN index and queue
     * @param operation {@code count}, {@code list} or {@code processes}
     * @param limit     count: pending after, in ms; list: most scope hashes per state; processes: unused
     */
    record Unsettled(List<String> slotKeys, String operation, String recordPrefix, long limit)
            implements ScriptCall<List<Object>> {

        @Override
        public LuaScript script() {
            return UNSETTLED;
        }

        @Override
        public List<String> keys() {
            return slotKeys;
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(operation), text(recordPrefix), number(limit));
        }
    }

    /** As {@link Unsettled}, over many slots of one master, each key its prefix, the slot's tag and '}'. */
    record UnsettledByMaster(String firstSlotKey, String operation, String recordPrefix, long limit,
            String inFlightPrefix, String uncertainPrefix, String queuePrefix, List<String> tags)
            implements ScriptCall<List<Object>> {

        @Override
        public LuaScript script() {
            return UNSETTLED_BY_MASTER;
        }

        @Override
        public List<String> keys() {
            return List.of(firstSlotKey);
        }

        @Override
        public List<byte[]> args() {
            List<byte[]> args = new ArrayList<>(List.of(text(operation), text(recordPrefix), number(limit),
                    text(inFlightPrefix), text(uncertainPrefix), text(queuePrefix)));
            tags.forEach(tag -> args.add(text(tag)));
            return args;
        }
    }

    /** Returns 1 when the record was added to the index, else 0. */
    record Backfill(String record, String inFlight, String uncertain, String scopeHash) implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return BACKFILL;
        }

        @Override
        public List<String> keys() {
            return List.of(record, inFlight, uncertain);
        }

        @Override
        public List<byte[]> args() {
            return List.of(text(scopeHash));
        }
    }

    /** The health check's: a script runs at all (Redis answers, and its ACL lets this user run scripts). */
    record Probe() implements ScriptCall<Long> {

        @Override
        public LuaScript script() {
            return PROBE;
        }

        @Override
        public List<String> keys() {
            return List.of();
        }

        @Override
        public List<byte[]> args() {
            return List.of();
        }
    }

    private static String textAt(List<?> reply, int index) {
        return index < reply.size() ? RedisKeyspace.text(reply.get(index)) : "";
    }

    private static byte[] bytesAt(List<?> reply, int index) {
        return index < reply.size() && reply.get(index) instanceof byte[] b ? b : new byte[0];
    }

    private static List<String> textsFrom(List<?> reply, int from) {
        List<String> texts = new ArrayList<>(Math.max(0, reply.size() - from));
        for (int i = from; i < reply.size(); i++) {
            texts.add(RedisKeyspace.text(reply.get(i)));
        }
        return texts;
    }
}
