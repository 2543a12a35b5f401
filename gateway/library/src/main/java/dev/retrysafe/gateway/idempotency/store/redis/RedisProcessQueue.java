package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.PROCESSES;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.recordKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.text;

import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The fleet's queue of pending processes in Redis ({@link RedisFleetQueue}, keys {@link RedisKeyspace#PROCESSES}):
 * per Cluster slot, scope hashes by next poll time, queued by the step that stores a 202 naming a process; a poll
 * that finds its process still running queues it again later, one that finds it ended settles the record.
 */
public final class RedisProcessQueue implements ProcessQueue {
    private static final List<String> RECORD_FIELDS = List.of("route", "upstream", "process_id", "process_state");
    private final Supplier<StoreConnection> redis;
    private final RedisFleetQueue queue;

    /**
     * @param redis    the store's connection ({@link PreopenedConnections#store()})
     * @param template Spring Data's, for a Cluster's topology (the directory's restore reads the slots by master)
     * @param cluster  a Redis Cluster: the slots' queues are read a master at a time ({@link UnsettledIndex})
     */
    public RedisProcessQueue(Supplier<StoreConnection> redis, ReactiveRedisTemplate<String, byte[]> template,
            boolean cluster) {
        this.redis = redis;
        this.queue = new RedisFleetQueue(redis, new UnsettledIndex(redis, template, cluster), PROCESSES);
    }

    /**
     * Look into the record's slot within {@code delay}: called around the store step of a 202 naming a process, on a
     * Cluster, over the store's own connection.
     */
    static Mono<Void> lookSoon(StoreConnection redis, String scopeHash, Duration delay) {
        return RedisFleetQueue.lookSoon(redis, PROCESSES, scopeHash, delay);
    }

    @Override
    public Mono<Integer> pollDue(int max, Duration claim, Duration maxDelay,
            Function<DueProcess, Mono<PollResult>> poll) {
        return queue.claimDue(max, claim)
                .flatMap(batch -> Flux.fromIterable(batch.scopeHashes())
                        .flatMap(scope -> pollOne(scope, maxDelay, poll), 8)
                        // After the polls, which move entries later or out.
                        .then(queue.lookNext(batch))
                        .thenReturn(batch.scopeHashes().size()), 4)
                .reduce(0, Integer::sum);
    }

    /**
     * The directory's writes around the store step can be lost with a Redis master while the 202's own step queued the
     * process in its slot: every slot that holds processes is put back at its earliest poll.
     */
    @Override
    public Mono<Integer> restoreLostSlots(Duration interval) {
        return queue.restoreLostSlots(interval);
    }

    private Mono<Void> pollOne(String scopeHash, Duration maxDelay, Function<DueProcess, Mono<PollResult>> poll) {
        return StoreConnection.on(redis, c -> c.hmget(recordKey(scopeHash), RECORD_FIELDS))
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
        // The store's own step for a process that ended (a status read through the gateway runs it there).
        return StoreConnection.run(redis, new StoreScripts.ProcessEnded(recordKey(due.scopeHash()),
                PROCESSES.queueKey(due.scopeHash()), due.processId(), ended.status(), ended.retention(),
                due.scopeHash())).then();
    }

    private Mono<Void> pollLater(String scopeHash, String processId, Duration maxDelay) {
        return StoreConnection.run(redis, new StoreScripts.PollLater(recordKey(scopeHash), PROCESSES.queueKey(scopeHash),
                processId, maxDelay, scopeHash)).then();
    }

    private static Optional<DueProcess> dueProcess(String scopeHash, List<byte[]> fields) {
        if (fields.size() < 4 || fields.stream().anyMatch(f -> f == null)
                || !"PENDING".equals(text(fields.get(3)))) {
            return Optional.empty();
        }
        return Optional.of(new DueProcess(scopeHash, text(fields.get(0)), text(fields.get(2)), text(fields.get(1))));
    }
}
