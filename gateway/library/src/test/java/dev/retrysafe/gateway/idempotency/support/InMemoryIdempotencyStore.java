package dev.retrysafe.gateway.idempotency.support;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.LookupValues;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.UncertainMark;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.LongSupplier;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The {@link IdempotencyStore} in memory, for tests that should run in milliseconds: what the Redis store's Lua
 * scripts do, step by step, on a map. Each operation is one {@code synchronized} step, as each script is one atomic
 * step on the Redis server; nothing happens before the returned Mono is subscribed, as with Redis.
 * <p>
 * Time is read from an injected clock (the Redis store reads the Redis server's TIME): leases lapse and records,
 * released owners and process links expire when that clock passes their deadline, never by themselves, so a test
 * moves a {@link MutableClock} instead of sleeping. Deadlines are exclusive, as in Redis: a lease lapses once the
 * clock is past {@code lease_until}, a record expires once the clock is past its expiry.
 * <p>
 * Wake-ups go through {@link SettleSignals} like the Redis store's: a settle call that did something (any result
 * but NOT_OWNER) signals the scope, and so does a lease found lapsed while someone announced it would wait (Redis
 * publishes that one on its wake-up channel). {@code IdempotencyStoreContract} runs the same behaviours against
 * this store and the Redis one, so the two cannot drift apart unnoticed.
 */
public final class InMemoryIdempotencyStore implements IdempotencyStore, ProcessQueue, ReconcileQueue {
    /** What a lapsed lease leaves as the uncertain reason, word for word as idempotency_reserve.lua does. */
    public static final String LEASE_LAPSED_REASON =
            "lease lapsed: the gateway instance forwarding the request stopped renewing it";
    /**
     * As RedisIdempotencyStore.RELEASED_OWNERS_TTL: how long, at least, a scope remembers the owners released from
     * it (a retried release recognises its own earlier release; a late reserve or complete of theirs is refused).
     */
    public static final Duration RELEASED_OWNERS_TTL = Duration.ofMinutes(1);
    /** How an owner was released from a scope, as the values of idempotency-released-owners:{hash}. */
    private static final String RELEASED = "released";
    private static final String UNHELD = "unheld";
    private static final String BY_OPERATOR = "operator";
    private static final String PROCESS_PENDING = "PENDING";
    private static final String PROCESS_ENDED = "ENDED";

    private final LongSupplier clock;
    private final SettleSignals signals;
    /** By scope hash, as the Redis keys idempotency:{hash}. */
    private final Map<String, Entry> records = new HashMap<>();
    /** By scope hash, as idempotency-released-owners:{hash}: every owner released while it lives, and how. */
    private final Map<String, ReleasedOwners> releasedOwners = new HashMap<>();
    /** By route and process id, as idempotency-process:route:id: the scope hash of the record. */
    private final Map<String, Expiring> processLinks = new HashMap<>();
    /** By scope hash, as the idempotency-processes:{tag} sorted sets: when the process's next poll is due. */
    private final Map<String, Long> pendingProcesses = new HashMap<>();
    /** By scope hash, as the idempotency-reconcile:{tag} sorted sets: when the record's lookup is due. */
    private final Map<String, Long> pendingLookups = new HashMap<>();
    private Duration firstProcessPoll = Duration.ofSeconds(1);
    private final AtomicInteger restoreCalls = new AtomicInteger();
    private final AtomicInteger pollDueCalls = new AtomicInteger();
    private Mono<Void> listening = Mono.empty();

    /** On the system clock. */
    public InMemoryIdempotencyStore() {
        this(Clock.systemUTC());
    }

    public InMemoryIdempotencyStore(Clock clock) {
        this(clock::millis);
    }

    /** @param millis the current time in epoch milliseconds */
    public InMemoryIdempotencyStore(LongSupplier millis) {
        this(millis, new SettleSignals());
    }

    public InMemoryIdempotencyStore(LongSupplier millis, SettleSignals signals) {
        this.clock = millis;
        this.signals = signals;
    }

    /** As RedisIdempotencyStore's firstProcessPoll: when a queued process is first due (default one second). */
    public synchronized InMemoryIdempotencyStore firstProcessPoll(Duration delay) {
        this.firstProcessPoll = delay;
        return this;
    }

    @Override
    public Mono<Reservation> reserve(ReservationRequest r) {
        return step(wakeUps -> {
            long now = clock.getAsLong();
            String hash = r.scope().hash();
            Entry entry = live(hash, now);
            boolean replay = entry != null && entry.state == RecordState.COMPLETED
                    && r.fingerprints().sameIntentAs(entry.fingerprints);
            if (!replay && releasedHow(hash, r.owner(), now) != null) {
                // Its own reserve arriving after its release: it must not bind the key to an owner nobody holds. A
                // replay writes nothing: even a released owner is told the key's result.
                return new Reservation.Fenced(r.owner());
            }
            if (entry == null) {
                entry = new Entry(r.fingerprints());
                entry.routeId = r.scope().operation();
                entry.upstream = r.upstream();
                entry.state = RecordState.IN_FLIGHT;
                entry.owner = r.owner();
                entry.leaseUntil = now + millis(r.lease());
                entry.lookup = r.lookup().orElse(null);
                // The record outlives its lease: a lease that lapses makes it UNCERTAIN, never free.
                entry.expiresAt = now + millis(r.recordTtl());
                records.put(hash, entry);
                return new Reservation.Reserved(r.owner());
            }
            if (!r.fingerprints().sameIntentAs(entry.fingerprints)) {
                // Another payload: the record as it stands (no lapse applied), never its response.
                return taken(entry.state, entry.fingerprints, Optional.empty(), false);
            }
            if (entry.state == RecordState.IN_FLIGHT && r.owner().equals(entry.owner)) {
                // Its own reserve re-sent after a reconnect: still its own, a fresh lease, no waiter counted.
                entry.leaseUntil = now + millis(r.lease());
                return new Reservation.Reserved(r.owner());
            }
            if (entry.state == RecordState.IN_FLIGHT && entry.leaseUntil < now) {
                entry.state = RecordState.UNCERTAIN;
                entry.uncertainReason = LEASE_LAPSED_REASON;
                entry.expiresAt = now + millis(r.recordTtl());
                becameUncertain(hash, entry, now);
                if (entry.waiters > 0) {
                    wakeUps.add(hash);
                }
            }
            if (entry.state == RecordState.UNCERTAIN && r.retakeUncertain()) {
                // The upstream recognises the key itself: sending it again cannot act twice.
                entry.state = RecordState.IN_FLIGHT;
                entry.owner = r.owner();
                entry.leaseUntil = now + millis(r.lease());
                entry.attempts++;
                entry.expiresAt = now + millis(r.recordTtl());
                return new Reservation.Reserved(r.owner());
            }
            if (entry.state == RecordState.COMPLETED) {
                return taken(entry.state, entry.fingerprints, Optional.of(copy(entry.response)),
                        PROCESS_ENDED.equals(entry.processState));
            }
            if (entry.state == RecordState.IN_FLIGHT && r.willWait()) {
                entry.waiters++;
            }
            return taken(entry.state, entry.fingerprints, Optional.empty(), false);
        });
    }

    @Override
    public Mono<Boolean> renew(IdempotencyScope scope, OwnerToken owner, Duration lease) {
        return step(wakeUps -> {
            long now = clock.getAsLong();
            Entry entry = live(scope.hash(), now);
            if (entry == null || entry.state != RecordState.IN_FLIGHT || !owner.equals(entry.owner)) {
                return false;
            }
            // Not checked against the clock: only a reservation turns a lapsed lease UNCERTAIN, as in Redis.
            entry.leaseUntil = now + millis(lease);
            return true;
        });
    }

    @Override
    public Mono<CompletionResult> complete(Completion c) {
        return step(wakeUps -> {
            long now = clock.getAsLong();
            String hash = c.scope().hash();
            Entry entry = live(hash, now);
            int status = c.response().status();
            if (entry != null && entry.state == RecordState.COMPLETED && c.owner().equals(entry.owner)
                    && entry.fingerprints.fingerprint().equals(c.fingerprints().fingerprint()) && entry.status == status) {
                // A retried call whose first attempt landed: same owner, same request, same status.
                wakeUps.add(hash);
                return CompletionResult.ALREADY_STORED;
            }
            String released = releasedHow(hash, c.owner(), now);
            if (released != null) {
                // Released from the scope: its late result neither brings the record back nor touches the next one.
                return BY_OPERATOR.equals(released) ? CompletionResult.FENCED : CompletionResult.NOT_OWNER;
            }
            CompletionResult result = CompletionResult.STORED;
            if (entry == null) {
                // The record vanished: nobody else can own a record that does not exist.
                entry = new Entry(c.fingerprints());
                entry.routeId = c.scope().operation();
                entry.upstream = c.upstream();
                entry.restored = true;
                records.put(hash, entry);
                result = CompletionResult.RESTORED;
            } else if ((entry.state != RecordState.IN_FLIGHT && entry.state != RecordState.UNCERTAIN)
                    || !c.owner().equals(entry.owner)) {
                return CompletionResult.NOT_OWNER;
            }
            entry.state = RecordState.COMPLETED;
            entry.response = copy(c.response());
            entry.status = status;
            entry.owner = c.owner();
            entry.waiters = 0;
            entry.leaseUntil = 0;
            if (c.processId().isPresent()) {
                entry.processId = c.processId().get();
                entry.processState = PROCESS_PENDING;
                entry.pollDelay = millis(firstProcessPoll);
                pendingProcesses.put(hash, now + entry.pollDelay);
                // SET ... PX ttl in the same step: the link's own expiry, not clamped like the record's.
                processLinks.put(processKey(c.scope().operation(), entry.processId),
                        new Expiring(hash, now + c.ttl().toMillis()));
            }
            entry.expiresAt = now + millis(c.ttl());
            wakeUps.add(hash);
            return result;
        });
    }

    @Override
    public Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner) {
        return step(wakeUps -> {
            long now = clock.getAsLong();
            String hash = scope.hash();
            Entry entry = live(hash, now);
            if (entry == null || (entry.state != RecordState.IN_FLIGHT && entry.state != RecordState.UNCERTAIN)
                    || !owner.equals(entry.owner)) {
                String released = releasedHow(hash, owner, now);
                if (RELEASED.equals(released)) {
                    wakeUps.add(hash);
                    return SettleResult.ALREADY_DONE;
                }
                // Not its own: its reserve, if still on the way, must not create a record nobody holds.
                rememberReleased(hash, owner, UNHELD, millis(RELEASED_OWNERS_TTL), now);
                return SettleResult.NOT_OWNER;
            }
            records.remove(hash);
            rememberReleased(hash, owner, RELEASED, millis(RELEASED_OWNERS_TTL), now);
            wakeUps.add(hash);
            return SettleResult.DONE;
        });
    }

    @Override
    public Mono<SettleResult> markUncertain(UncertainMark mark) {
        IdempotencyScope scope = mark.scope();
        OwnerToken owner = mark.owner();
        String reason = mark.reason();
        Duration ttl = mark.ttl();
        return step(wakeUps -> {
            long now = clock.getAsLong();
            String hash = scope.hash();
            Entry entry = live(hash, now);
            if (entry == null) {
                if (releasedHow(hash, owner, now) != null) {
                    return SettleResult.NOT_OWNER;
                }
                // Vanished while its request was out: written anew UNCERTAIN, as a late complete writes it COMPLETED.
                Entry anew = new Entry(mark.fingerprints());
                anew.routeId = scope.operation();
                anew.upstream = mark.upstream();
                anew.restored = true;
                anew.owner = owner;
                anew.state = RecordState.UNCERTAIN;
                anew.uncertainReason = reason;
                anew.lookup = mark.lookup().orElse(null);
                anew.expiresAt = now + millis(ttl);
                records.put(hash, anew);
                becameUncertain(hash, anew, now);
                return SettleResult.RESTORED;
            }
            if (entry.state == RecordState.UNCERTAIN && owner.equals(entry.owner) && entry.leaseUntil != 0) {
                // Its own record, UNCERTAIN since its lease lapsed (a lapse keeps the lease, a mark clears it): the
                // owner gives the true reason; it has been uncertain since the lapse.
                entry.uncertainReason = reason;
                entry.leaseUntil = 0;
                wakeUps.add(hash);
                return SettleResult.DONE;
            }
            // The reason tells a retry of the owner's own mark from another mark.
            if (entry.state == RecordState.UNCERTAIN && owner.equals(entry.owner)
                    && reason.equals(entry.uncertainReason)) {
                wakeUps.add(hash);
                return SettleResult.ALREADY_DONE;
            }
            if (entry.state != RecordState.IN_FLIGHT || !owner.equals(entry.owner)) {
                return SettleResult.NOT_OWNER;
            }
            entry.state = RecordState.UNCERTAIN;
            entry.uncertainReason = reason;
            entry.leaseUntil = 0;
            entry.waiters = 0;
            entry.expiresAt = now + millis(ttl);
            becameUncertain(hash, entry, now);
            wakeUps.add(hash);
            return SettleResult.DONE;
        });
    }

    /**
     * As idempotency_operator_release.lua: frees an IN_FLIGHT or UNCERTAIN record and fences its former owner for as
     * long as the record would have lived (at least {@link #RELEASED_OWNERS_TTL}). Returns the state it was in, or
     * {@code ABSENT}.
     */
    public Mono<String> releaseByOperator(IdempotencyScope scope) {
        return step(wakeUps -> {
            long now = clock.getAsLong();
            String hash = scope.hash();
            Entry entry = live(hash, now);
            if (entry == null) {
                return "ABSENT";
            }
            if (entry.state != RecordState.IN_FLIGHT && entry.state != RecordState.UNCERTAIN) {
                return entry.state.name();
            }
            records.remove(hash);
            rememberReleased(hash, entry.owner, BY_OPERATOR,
                    Math.max(entry.expiresAt - now, millis(RELEASED_OWNERS_TTL)), now);
            wakeUps.add(hash);
            return entry.state.name();
        });
    }

    /** As the scripts that make a record UNCERTAIN: one its reservation gave lookup values is queued for a lookup. */
    private void becameUncertain(String hash, Entry entry, long now) {
        entry.uncertainAt = now;
        if (entry.lookup != null) {
            pendingLookups.put(hash, now + millis(entry.lookup.after()));
        }
    }

    /** As RedisReconcileQueue, without slots: claims the due lookups, each pushed back by the claim. */
    @Override
    public Flux<DueLookup> claimDue(int max, Duration claim) {
        return step(wakeUps -> {
            long now = clock.getAsLong();
            List<DueLookup> due = new ArrayList<>();
            pendingLookups.entrySet().stream().filter(e -> e.getValue() <= now)
                    .sorted(Map.Entry.comparingByValue()).limit(max).toList()
                    .forEach(e -> {
                        e.setValue(now + millis(claim));
                        Entry entry = live(e.getKey(), now);
                        if (entry == null || entry.state != RecordState.UNCERTAIN || entry.lookup == null) {
                            pendingLookups.remove(e.getKey());
                        } else {
                            due.add(new DueLookup(e.getKey(), entry.routeId, entry.upstream, entry.lookup.values(),
                                    entry.owner.value(), entry.uncertainAt));
                        }
                    });
            return due;
        }).flatMapMany(Flux::fromIterable);
    }

    /** As idempotency_reconcile_settle.lua: a compare-and-set on the record as it was claimed. */
    @Override
    public Mono<Boolean> settle(DueLookup due, LookupResult result) {
        return step(wakeUps -> {
            long now = clock.getAsLong();
            String hash = due.scopeHash();
            Entry entry = live(hash, now);
            if (entry == null || entry.state != RecordState.UNCERTAIN || !due.owner().equals(entry.owner.value())
                    || entry.uncertainAt != due.uncertainSince()) {
                if (entry == null || entry.state != RecordState.UNCERTAIN || entry.lookup == null) {
                    pendingLookups.remove(hash);
                }
                return false;
            }
            if (result instanceof LookupResult.Failed failed) {
                entry.lookupDelay = entry.lookupDelay == 0 ? millis(failed.firstDelay())
                        : Math.min(2 * entry.lookupDelay, millis(failed.maxDelay()));
                pendingLookups.put(hash, now + entry.lookupDelay);
                return true;
            }
            pendingLookups.remove(hash);
            if (result instanceof LookupResult.Found found) {
                entry.state = RecordState.COMPLETED;
                entry.response = copy(found.response());
                entry.status = found.response().status();
                entry.owner = null;
                entry.lookup = null;
                entry.resolvedBy = "reconciler";
                entry.expiresAt = now + millis(found.retention());
                if (found.processId().isPresent()) {
                    entry.processId = found.processId().get();
                    entry.processState = PROCESS_PENDING;
                    entry.pollDelay = millis(firstProcessPoll);
                    pendingProcesses.put(hash, now + entry.pollDelay);
                    processLinks.put(processKey(entry.routeId, entry.processId),
                            new Expiring(hash, now + found.retention().toMillis()));
                }
            } else {
                records.remove(hash);
                rememberReleased(hash, new OwnerToken(due.owner()), BY_OPERATOR,
                        Math.max(entry.expiresAt - now, millis(RELEASED_OWNERS_TTL)), now);
            }
            wakeUps.add(hash);
            return true;
        });
    }

    /** When the scope's lookup is next due, if it is queued. */
    public synchronized Optional<Long> lookupDueAt(IdempotencyScope scope) {
        return Optional.ofNullable(pendingLookups.get(scope.hash()));
    }

    @Override
    public Mono<Boolean> processEnded(String routeId, String processId, String terminalValue, Duration retention) {
        return step(wakeUps -> {
            long now = clock.getAsLong();
            Expiring link = live(processLinks, processKey(routeId, processId), now);
            if (link == null) {
                return false;
            }
            Entry entry = live(link.value, now);
            if (entry == null || !processId.equals(entry.processId) || PROCESS_ENDED.equals(entry.processState)) {
                return false;
            }
            entry.processState = PROCESS_ENDED;
            entry.processStatus = terminalValue;
            entry.expiresAt = now + millis(retention);
            pendingProcesses.remove(link.value);
            return true;
        });
    }

    /** As RedisProcessQueue, without slots: claims, polls and records one batch of due processes. */
    /** One map is the whole queue here: no separate directory that a failover could make lose a part. */
    @Override
    public Mono<Integer> restoreLostSlots(Duration interval) {
        restoreCalls.incrementAndGet();
        return Mono.just(0);
    }

    /** How often a watcher asked to restore the queue's directory, and to poll due processes. */
    public int restoreCalls() {
        return restoreCalls.get();
    }

    public int pollDueCalls() {
        return pollDueCalls.get();
    }

    @Override
    public Mono<Integer> pollDue(int max, Duration claim, Duration maxDelay,
            Function<DueProcess, Mono<PollResult>> poll) {
        pollDueCalls.incrementAndGet();
        return step(wakeUps -> {
            long now = clock.getAsLong();
            List<DueProcess> due = new ArrayList<>();
            pendingProcesses.entrySet().stream().filter(e -> e.getValue() <= now)
                    .sorted(Map.Entry.comparingByValue()).limit(max).toList()
                    .forEach(e -> {
                        e.setValue(now + millis(claim));
                        Entry entry = live(e.getKey(), now);
                        if (entry == null || !PROCESS_PENDING.equals(entry.processState)) {
                            pendingProcesses.remove(e.getKey());
                        } else {
                            due.add(new DueProcess(e.getKey(), entry.routeId, entry.processId, entry.upstream));
                        }
                    });
            return due;
        }).flatMapMany(Flux::fromIterable)
                .flatMap(process -> Mono.defer(() -> poll.apply(process))
                        .onErrorReturn(PollResult.RUNNING).defaultIfEmpty(PollResult.RUNNING)
                        .flatMap(result -> step(wakeUps -> {
                            record(process, result, maxDelay);
                            return 1;
                        })))
                .reduce(0, Integer::sum);
    }

    private void record(DueProcess process, PollResult result, Duration maxDelay) {
        long now = clock.getAsLong();
        Entry entry = live(process.scopeHash(), now);
        if (entry == null || !process.processId().equals(entry.processId)
                || !PROCESS_PENDING.equals(entry.processState)) {
            pendingProcesses.remove(process.scopeHash());
            return;
        }
        if (result instanceof PollResult.Ended ended) {
            entry.processState = PROCESS_ENDED;
            entry.processStatus = ended.status();
            entry.expiresAt = now + millis(ended.retention());
            pendingProcesses.remove(process.scopeHash());
        } else {
            entry.pollDelay = Math.min(2 * entry.pollDelay, millis(maxDelay));
            pendingProcesses.put(process.scopeHash(), now + entry.pollDelay);
        }
    }

    /** When the scope's process is next due for a status poll, if it is queued. */
    public synchronized Optional<Long> processDueAt(IdempotencyScope scope) {
        return Optional.ofNullable(pendingProcesses.get(scope.hash()));
    }

    /**
     * As the Redis store on shard channels, whose waiters listen once Redis acknowledged their subscription: from
     * now on a waiter's {@link SettleWaiter#listening()} completes with {@code cue}.
     */
    public synchronized InMemoryIdempotencyStore listeningOnCue(Mono<Void> cue) {
        this.listening = cue;
        return this;
    }

    @Override
    public SettleWaiter awaitSettle(IdempotencyScope scope) {
        SettleWaiter waiter = signals.register(scope.hash());
        Mono<Void> cue;
        synchronized (this) {
            cue = listening;
        }
        return new SettleWaiter() {
            @Override
            public Mono<Void> settled() {
                return waiter.settled();
            }

            @Override
            public Mono<Void> listening() {
                return cue;
            }

            @Override
            public void close() {
                waiter.close();
            }
        };
    }

    /** The wake-ups of this store, for tests that count waiters. */
    public SettleSignals signals() {
        return signals;
    }

    /**
     * The record of a scope as the store holds it now, or empty when there is none (or it expired). Looks only:
     * unlike a reservation it never turns a lapsed lease UNCERTAIN, as an operator's look at Redis would not.
     */
    public synchronized Optional<StoredRecord> record(IdempotencyScope scope) {
        Entry entry = live(scope.hash(), clock.getAsLong());
        return Optional.ofNullable(entry).map(Entry::view);
    }

    /** How many records the store holds now (expired ones not counted). */
    public synchronized int size() {
        long now = clock.getAsLong();
        records.values().removeIf(entry -> now > entry.expiresAt);
        return records.size();
    }

    /**
     * Forgets a record, as a Redis that restarted without persistence would: the owner's completion then writes it
     * anew ({@link CompletionResult#RESTORED}).
     */
    public synchronized void forget(IdempotencyScope scope) {
        records.remove(scope.hash());
    }

    /**
     * One record as it stands, the fields of the Redis hash that tests look at.
     *
     * @param leaseUntil     when the owner's lease ends (epoch ms), for an IN_FLIGHT record
     * @param expiresAt      when the record goes (epoch ms)
     * @param attempts       how many times it was reserved (a retaken UNCERTAIN record counts again)
     * @param waiters        reservations that announced they would wait, since it was last settled
     * @param processEndedWith the terminal status the process its stored response started ended with, once it has
     * @param restored       written anew by a completion after the record had vanished
     */
    public record StoredRecord(RecordState state, Fingerprint fingerprint, OwnerToken owner,
            Optional<StoredResponse> response, OptionalLong leaseUntil, long expiresAt, int attempts, int waiters,
            Optional<String> uncertainReason, Optional<String> processId, Optional<String> processEndedWith,
            boolean restored) {
    }

    /** Runs one atomic step, then the wake-ups it asked for, outside the lock (waiters may call back in). */
    private <T> Mono<T> step(Function<List<String>, T> body) {
        return Mono.fromSupplier(() -> {
            List<String> wakeUps = new ArrayList<>(1);
            T result;
            synchronized (this) {
                result = body.apply(wakeUps);
            }
            wakeUps.forEach(signals::signal);
            return result;
        });
    }

    private Entry live(String hash, long now) {
        Entry entry = records.get(hash);
        if (entry != null && now > entry.expiresAt) {
            records.remove(hash);
            return null;
        }
        return entry;
    }

    /** How the owner was released from the scope, or null when it was not (or that was forgotten). */
    private String releasedHow(String hash, OwnerToken owner, long now) {
        ReleasedOwners released = releasedOwners.get(hash);
        if (released != null && now > released.expiresAt) {
            releasedOwners.remove(hash);
            return null;
        }
        return released == null ? null : released.how.get(owner.value());
    }

    /** As the scripts: a first word stays ('released' or 'operator' is never turned 'unheld'); the life only grows. */
    private void rememberReleased(String hash, OwnerToken owner, String how, long lifeMillis, long now) {
        releasedHow(hash, owner, now);
        ReleasedOwners released = releasedOwners.computeIfAbsent(hash, h -> new ReleasedOwners());
        if (UNHELD.equals(how)) {
            released.how.putIfAbsent(owner.value(), how);
        } else {
            released.how.put(owner.value(), how);
        }
        released.expiresAt = Math.max(released.expiresAt, now + lifeMillis);
    }

    private static Expiring live(Map<String, Expiring> map, String key, long now) {
        Expiring value = map.get(key);
        if (value != null && now > value.expiresAt) {
            map.remove(key);
            return null;
        }
        return value;
    }

    private static Reservation taken(RecordState state, Fingerprints fingerprint, Optional<StoredResponse> response,
            boolean processEnded) {
        return new Reservation.Taken(new IdempotencyRecord(state, fingerprint, response, processEnded));
    }

    /** As the Redis store sends durations: whole milliseconds, at least one (PEXPIRE 0 would delete the key). */
    private static long millis(Duration duration) {
        return Math.max(1, duration.toMillis());
    }

    private static String processKey(String routeId, String processId) {
        return routeId + ":" + processId;
    }

    /** Stored bytes are the store's own: neither the caller's array nor the one handed back can change them. */
    private static StoredResponse copy(StoredResponse response) {
        return new StoredResponse(response.status(), response.headers(), response.body().clone(),
                response.bodyOmitted());
    }

    private record Expiring(String value, long expiresAt) {
    }

    private static final class ReleasedOwners {
        final Map<String, String> how = new HashMap<>();
        long expiresAt;
    }

    /** The fields of one Redis record hash that change what the store answers. */
    private static final class Entry {
        final Fingerprints fingerprints;
        RecordState state;
        OwnerToken owner;
        long leaseUntil;
        int attempts = 1;
        int waiters;
        long expiresAt;
        StoredResponse response;
        int status;
        String uncertainReason;
        String processId;
        String processState;
        String processStatus;
        long pollDelay;
        String routeId;
        String upstream;
        boolean restored;
        LookupValues lookup;
        long uncertainAt;
        long lookupDelay;
        String resolvedBy;

        Entry(Fingerprints fingerprints) {
            this.fingerprints = fingerprints;
        }

        StoredRecord view() {
            return new StoredRecord(state, fingerprints.fingerprint(), owner, Optional.ofNullable(response).map(
                    InMemoryIdempotencyStore::copy),
                    state == RecordState.IN_FLIGHT ? OptionalLong.of(leaseUntil) : OptionalLong.empty(), expiresAt,
                    attempts, waiters, Optional.ofNullable(uncertainReason), Optional.ofNullable(processId),
                    Optional.ofNullable(processStatus), restored);
        }
    }
}
