package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.processLinkKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.releasedOwnersKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.recordKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.bytes;
import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.LookupValues;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.StoreCallNotSent;
import dev.retrysafe.gateway.idempotency.store.UncertainMark;
import io.lettuce.core.RedisException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The store on Redis: one hash per scope, {@code idempotency:{<scope hash>}}, changed only by the Lua scripts under
 * {@code META-INF/scripts}. The braces are a hash tag, so a record stays in one slot of a Redis Cluster. Key names
 * carry only the hash: Redis never sees a raw tenant or key.
 *
 * <p>Every call of a request (reserve, renew, complete with a Cluster's process link and directory calls, release,
 * mark uncertain, process ended, and the look-soon they ask of the reconcile queue) is one command on the store's own
 * Lettuce connection ({@link StoreConnection}: scripts by SHA, no connection looked up per call); with
 * {@code idempotency.replica-acks}, reserve and complete run on {@link ReplicaAcks}'s connections, which can
 * {@code WAIT}. The process and reconcile queues, the unsettled index, the memory watch, the operator's inspector and
 * the health check still go through Spring Data's template.
 */
public final class RedisIdempotencyStore implements IdempotencyStore, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RedisIdempotencyStore.class);
    /**
     * How long, at least, a scope remembers the owners released from it, when nothing else says (the
     * auto-configuration passes {@link #releasedOwnersTtl(Duration)} of the gateway's in-flight lease).
     */
    public static final Duration RELEASED_OWNERS_TTL = Duration.ofMinutes(1);


    /** The store's connection; until it is open, a {@link PreopenedConnections.NotOpenYet}. */
    private final Supplier<StoreConnection> redis;
    private final RedisWakeUps wakeUps;
    private final StoredResponseCodec codec;
    private final LookupValuesCodec lookupValues;
    private final Optional<ReplicaAcks> replicaAcks;
    private final Duration firstProcessPoll;
    private final Duration releasedOwnersTtl;
    private final Optional<NearCache> nearCache;

    /**
     * @param redis         the store's connection: {@link PreopenedConnections#store()}, which refuses at once until
     *                      it is open
     * @param wakeUps       the channel the scripts publish wake-ups on, and this instance's waiters
     * @param compressAbove stored bodies of at least this many bytes are deflated when that saves space
     * @param encryption    seals stored responses when enabled (AES-GCM); {@link EncryptionKeys#none()} for plain
     * @param replicaAcks   when present, reservations and stored results wait for replica acknowledgement
     * @param firstProcessPoll how long after a 202 naming an unfinished process its status is first polled
     *                      ({@code idempotency.process-poll.initial-delay}): it enters {@link RedisProcessQueue}
     * @param releasedOwnersTtl how long, at least, a scope remembers an owner released from it (see
     *                      {@link #releasedOwnersTtl(Duration)})
     * @param nearCache     when present, replays of settled records are answered from it while it may serve them
     *                      ({@code idempotency.store.near-cache})
     */
    public RedisIdempotencyStore(Supplier<StoreConnection> redis, RedisWakeUps wakeUps,
            int compressAbove, EncryptionKeys encryption, Optional<ReplicaAcks> replicaAcks,
            Duration firstProcessPoll, Duration releasedOwnersTtl, Optional<NearCache> nearCache) {
        this.redis = redis;
        this.nearCache = nearCache;
        this.firstProcessPoll = firstProcessPoll;
        this.releasedOwnersTtl = releasedOwnersTtl;
        this.wakeUps = wakeUps;
        this.codec = new StoredResponseCodec(compressAbove, encryption);
        this.lookupValues = new LookupValuesCodec(encryption);
        this.replicaAcks = replicaAcks;
    }

    /**
     * How long a scope remembers an owner released from it: a reserve of that owner that lands later creates a
     * record nobody holds. A reserve lands after its release only while it is still on its way: re-sent by Lettuce
     * after a reconnect (reconnects back off to a second at most), or overtaken by the release on another connection;
     * the gateway gives a reservation it did not use up and retries that release for at most one lease. So at least
     * the in-flight lease, and never less than a minute (what a retried release's note always had): a few bytes per
     * released scope, gone by themselves.
     */
    public static Duration releasedOwnersTtl(Duration inFlightLease) {
        return inFlightLease.compareTo(RELEASED_OWNERS_TTL) > 0 ? inFlightLease : RELEASED_OWNERS_TTL;
    }

    @Override
    public Mono<Reservation> reserve(ReservationRequest r) {
        if (nearCache.isEmpty()) {
            return reserveInRedis(r, recordKey(r.scope()));
        }
        NearCache cache = nearCache.get();
        // Asked when subscribed: a reserve subscribed again (a retry) asks again.
        return Mono.defer(() -> {
            String key = recordKey(r.scope());
            Optional<IdempotencyRecord> settled = cache.replay(key, r.fingerprints());
            return settled.isPresent()
                    ? Mono.just(new Reservation.Taken(settled.get()))
                    : reserveInRedis(r, key);
        });
    }

    private Mono<Reservation> reserveInRedis(ReservationRequest r, String recordKey) {
        IdempotencyScope scope = r.scope();
        Fingerprints fingerprints = r.fingerprints();
        String hash = scope.hash();
        StoreScripts.Reserve call = new StoreScripts.Reserve(recordKey, RedisKeyspace.inFlightKey(hash),
                RedisKeyspace.uncertainKey(hash), releasedOwnersKey(hash), RedisKeyspace.LOOKUPS.queueKey(hash),
                fingerprints.fingerprint().hex(), r.owner().value(), r.lease(), r.willWait(), scope.operation(),
                scope.tenantHash(), r.upstream(), r.recordTtl(), r.retakeUncertain(), wakeUps.wakeUp(hash), r.method(),
                r.path(), r.lookup().map(l -> lookupValues.encode(l.values(), hash)).orElse(null),
                r.lookup().map(LookupValues::after).orElse(null), fingerprints.strict().hex(),
                fingerprints.rules(), scope.routeId());
        return reserve(r, call).onErrorMap(RedisIdempotencyStore::refusedBeforeSending, StoreCallNotSent::new);
    }

    /**
     * Refused by the client before it was written: no connection open yet ({@link PreopenedConnections}), or Lettuce
     * disconnected and rejecting commands (its DefaultEndpoint's own messages). A reserve that timed out, or whose
     * connection broke after it was written, is not one of these: it may have run.
     */
    static boolean refusedBeforeSending(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause() == cause ? null : cause.getCause()) {
            if (cause instanceof PreopenedConnections.NotOpenYet) {
                return true;
            }
            if (cause instanceof RedisException && cause.getMessage() != null
                    && (cause.getMessage().startsWith("Currently not connected. Commands are rejected")
                            || cause.getMessage().equals("Connection is closed"))) {
                return true;
            }
        }
        return false;
    }

    private Mono<Reservation> reserve(ReservationRequest r, StoreScripts.Reserve call) {
        IdempotencyScope scope = r.scope();
        if (replicaAcks.isPresent()) {
            return replicaAcks.get().run(call)
                    .flatMap(acked -> lookSoonIfQueued(acked.reply(), scope).thenReturn(acked))
                    .flatMap(acked -> {
                        Reservation reservation = toReservation(acked.reply(), r.owner(), scope);
                        if (reservation instanceof Reservation.Reserved && !acked.enough()) {
                            // Not safe to forward: a failover now could forget the reservation. Undone, refused.
                            return release(scope, r.owner()).onErrorComplete().then(Mono.error(
                                    new ReplicaAcknowledgementMissing("reservation", acked.replicas(),
                                            replicaAcks.get())));
                        }
                        return Mono.just(reservation);
                    });
        }
        return script(call)
                .flatMap(reply -> reply.lookupQueued()
                        ? lookSoonIfQueued(reply, scope).thenReturn(toReservation(reply, r.owner(), scope))
                        : Mono.just(toReservation(reply, r.owner(), scope)));
    }

    /**
     * A reserve that found a lapsed lease may have queued the record's lookup at its upstream: its slot is to be
     * looked into (due then or later: a look that comes early only learns when the slot's first lookup is due).
     */
    private Mono<Void> lookSoonIfQueued(StoreScripts.Reserve.Reply reply, IdempotencyScope scope) {
        return reply.lookupQueued()
                ? connection().flatMap(c -> RedisReconcileQueue.lookSoon(c, scope.hash(), Duration.ZERO))
                        .onErrorComplete()
                : Mono.empty();
    }

    @Override
    public Mono<Boolean> renew(IdempotencyScope scope, OwnerToken owner, Duration lease) {
        return script(new StoreScripts.Renew(recordKey(scope), owner.value(), lease)).map(changed -> changed == 1L);
    }

    @Override
    public Mono<CompletionResult> complete(Completion c) {
        IdempotencyScope scope = c.scope();
        if (c.processId().isEmpty()) {
            return store(scope, completeCall(c, null, null));
        }
        String link = processLinkKey(scope.operation(), c.processId().get());
        // One step on one Redis: the record, its process queued, linked, and its slot in the fleet's directory.
        return connection().flatMap(connection -> connection.cluster()
                ? completeOnCluster(connection, c, link)
                : store(scope, completeCall(c, RedisKeyspace.PROCESSES.directory(), link)));
    }

    /** @param directory and {@code link}: written in the same step (one Redis), or null (a Cluster, or no process) */
    private StoreScripts.Complete completeCall(Completion c, String directory, String link) {
        IdempotencyScope scope = c.scope();
        String hash = scope.hash();
        return new StoreScripts.Complete(recordKey(scope), RedisKeyspace.PROCESSES.queueKey(hash),
                RedisKeyspace.inFlightKey(hash), RedisKeyspace.uncertainKey(hash), releasedOwnersKey(hash), directory,
                link, c.owner().value(), codec.encode(c.response(), hash), c.response().status(), c.ttl(),
                c.processId().orElse(""), wakeUps.wakeUp(hash), identity(scope, c.fingerprints(), c.upstream()),
                firstProcessPoll, RedisKeyspace.slotTag(hash));
    }

    /**
     * What a record written anew (its own vanished while its request was out) is written with, whole, in this
     * release's format, '\n'-separated as idempotency_complete.lua and idempotency_uncertain.lua read it.
     */
    private static String identity(IdempotencyScope scope, Fingerprints fingerprints, String upstream) {
        return String.join("\n", fingerprints.fingerprint().hex(), scope.operation(), scope.tenantHash(), upstream,
                fingerprints.strict().hex(), fingerprints.rules(), scope.routeId());
    }

    private Mono<CompletionResult> completeOnCluster(StoreConnection redis, Completion c, String link) {
        IdempotencyScope scope = c.scope();
        // On a Cluster the directory and the link live in other slots than the record: written in calls of their own.
        // Where to look is said before the store step queues the process (a gateway dying right after it has said it
        // already) and again after it (a look racing the step cannot have dropped the slot), with the link. A failure
        // of theirs must not cost the result: the store step runs anyway, and an unlinked process is still polled.
        return RedisProcessQueue.lookSoon(redis, scope.hash(), firstProcessPoll).onErrorComplete()
                .then(store(scope, completeCall(c, null, null)))
                .flatMap(result -> !result.stored()
                        ? Mono.just(result)
                        : Mono.when(RedisProcessQueue.lookSoon(redis, scope.hash(), firstProcessPoll).onErrorComplete(),
                                redis.set(link, bytes(scope.hash()), c.ttl())
                                        .doOnError(e -> log.warn("Process {} of scope {} could not be linked to its "
                                                + "record ({}): its end is seen by polling, not by a status read",
                                                c.processId().get(), scope.hash(), e.toString()))
                                        .onErrorComplete())
                                .thenReturn(result));
    }

    private Mono<CompletionResult> store(IdempotencyScope scope, StoreScripts.Complete call) {
        if (replicaAcks.isPresent()) {
            return replicaAcks.get().run(call)
                    .flatMap(acked -> settle(scope, Mono.just(acked.reply()))
                            .map(RedisIdempotencyStore::completionResult)
                            .map(result -> result.stored() && !acked.enough()
                                    ? CompletionResult.STORED_UNACKNOWLEDGED
                                    : result));
        }
        return settle(scope, script(call), RedisIdempotencyStore::completionResult);
    }

    private static CompletionResult completionResult(Long scriptResult) {
        return switch (scriptResult.intValue()) {
            case 1 -> CompletionResult.STORED;
            case 2 -> CompletionResult.RESTORED;
            case 3 -> CompletionResult.ALREADY_STORED;
            case -1 -> CompletionResult.FENCED;
            default -> CompletionResult.NOT_OWNER;
        };
    }

    @Override
    public Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner) {
        String hash = scope.hash();
        changedHere(recordKey(scope));
        return settle(scope, script(new StoreScripts.Release(recordKey(scope), releasedOwnersKey(hash),
                RedisKeyspace.inFlightKey(hash), RedisKeyspace.uncertainKey(hash), owner.value(), wakeUps.wakeUp(hash),
                releasedOwnersTtl)), RedisIdempotencyStore::settleResult);
    }

    @Override
    public Mono<SettleResult> markUncertain(UncertainMark m) {
        IdempotencyScope scope = m.scope();
        String hash = scope.hash();
        changedHere(recordKey(scope));
        return settle(scope, script(new StoreScripts.Uncertain(recordKey(scope), RedisKeyspace.inFlightKey(hash),
                        RedisKeyspace.uncertainKey(hash), RedisKeyspace.LOOKUPS.queueKey(hash), releasedOwnersKey(hash),
                        m.owner().value(), m.reason(), m.ttl(), wakeUps.wakeUp(hash),
                        identity(scope, m.fingerprints(), m.upstream()),
                        m.lookup().map(l -> lookupValues.encode(l.values(), hash)).orElse(null),
                        m.lookup().map(LookupValues::after).orElse(null))))
                // 3 (5 for a record written anew): marked, and its lookup queued in the record's slot, which is to be
                // looked into (due then or later: a look that comes early only learns when the slot's first lookup is
                // due).
                .flatMap(result -> result == 3L || result == 5L
                        ? connection().flatMap(c -> RedisReconcileQueue.lookSoon(c, scope.hash(), Duration.ZERO))
                                .onErrorComplete()
                                .thenReturn(result == 3L ? SettleResult.DONE : SettleResult.RESTORED)
                        : Mono.just(settleResult(result)));
    }

    private static SettleResult settleResult(Long scriptResult) {
        return switch (scriptResult.intValue()) {
            case 1 -> SettleResult.DONE;
            case 2 -> SettleResult.ALREADY_DONE;
            case 4 -> SettleResult.RESTORED;
            default -> SettleResult.NOT_OWNER;
        };
    }

    @Override
    public Mono<Boolean> processEnded(String operation, String processId, String terminalValue, Duration retention) {
        return connection().flatMap(r -> r.get(processLinkKey(operation, processId)))
                .map(hash -> new String(hash, StandardCharsets.UTF_8))
                .doOnNext(scopeHash -> changedHere(recordKey(scopeHash)))
                .flatMap(scopeHash -> script(new StoreScripts.ProcessEnded(recordKey(scopeHash),
                        RedisKeyspace.PROCESSES.queueKey(scopeHash), processId, terminalValue, retention, scopeHash)))
                .map(changed -> changed == 1L)
                .defaultIfEmpty(false);
    }

    /**
     * This instance changes the record: its near copy goes at once (Redis's push follows, for every instance). A
     * replay answered between the two would still be the record's result until the change lands.
     */
    private void changedHere(String recordKey) {
        nearCache.ifPresent(cache -> cache.changed(recordKey));
    }

    @Override
    public void close() {
        replicaAcks.ifPresent(ReplicaAcks::close);
    }

    @Override
    public SettleWaiter awaitSettle(IdempotencyScope scope) {
        return wakeUps.register(scope.hash());
    }

    /** The store's connection, or the error it was refused with (not open yet): an error signal, never a throw. */
    private Mono<StoreConnection> connection() {
        return Mono.fromSupplier(redis);
    }

    /** One script call on the store's connection; not open yet: that error, as a signal. */
    private <R> Mono<R> script(ScriptCall<R> call) {
        StoreConnection connection;
        try {
            connection = redis.get();
        } catch (RuntimeException notOpen) {
            return Mono.error(notOpen);
        }
        return connection.run(call);
    }

    private Mono<Long> settle(IdempotencyScope scope, Mono<Long> script) {
        return settle(scope, script, changed -> changed);
    }

    /** The settling script's answer read as {@code result}, in the same step as the local wake-up. */
    private <R> Mono<R> settle(IdempotencyScope scope, Mono<Long> script, Function<Long, R> result) {
        // Waiters on this instance need not wait for the pub/sub round trip. Nothing done (0, or -1 fenced): none.
        return script.map(changed -> {
            if (changed > 0L) {
                wakeUps.settledHere(scope.hash());
            }
            return result.apply(changed);
        });
    }

    private Reservation toReservation(StoreScripts.Reserve.Reply reply, OwnerToken owner, IdempotencyScope scope) {
        if ("RESERVED".equals(reply.state())) {
            return new Reservation.Reserved(owner);
        }
        if ("FENCED".equals(reply.state())) {
            return new Reservation.Fenced(owner);
        }
        Fingerprints fingerprints = new Fingerprints(new Fingerprint(reply.fingerprint()),
                new Fingerprint(reply.strict()), reply.rules());
        RecordState recordState = RecordState.valueOf(reply.state());
        Optional<StoredResponse> response = recordState == RecordState.COMPLETED && reply.response().length > 0
                ? Optional.of(codec.decode(reply.response(), scope.hash()))
                : Optional.empty();
        boolean processEnded = "ENDED".equals(reply.processState());
        if (response.isPresent() && nearCache.isPresent()) {
            // Replayed from Redis: kept near for the next replays, read again on the tracking connection.
            nearCache.get().fill(recordKey(scope), values -> RecordFill.completed(values,
                    encoded -> codec.decode(encoded, scope.hash())));
        }
        return new Reservation.Taken(new IdempotencyRecord(recordState, fingerprints, response, processEnded));
    }
}
