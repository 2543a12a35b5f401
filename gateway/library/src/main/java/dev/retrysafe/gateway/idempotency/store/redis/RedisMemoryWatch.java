package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.MEMORY_MARKER_PREFIX;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.memoryMarkerKey;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.bytes;

import dev.retrysafe.gateway.idempotency.background.PeriodicRounds;
import dev.retrysafe.gateway.idempotency.store.redis.RedisMasters.Master;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Whether the Redis behind the store can forget records, on every master, at startup and every check interval:
 * <ul>
 * <li>a {@code maxmemory-policy} that evicts ({@code allkeys-*}, and {@code volatile-*}: every record has a TTL)
 * refuses the startup ({@link EvictingRedis}) unless the operator accepts it, and is an ERROR when found later (Redis
 * was down at startup, or the policy changed), once per change;</li>
 * <li>no AOF, no RDB snapshots and no replica acknowledging writes: a WARN, once per master;</li>
 * <li>a marker key per master with no TTL, written if absent: found gone (or re-armed by another instance with
 * another epoch), the master lost its memory: an ERROR once per loss, counted, and shown in health.</li>
 * </ul>
 * A Redis that cannot be reached at startup does not stop it: the checks run when it answers. The first sight of a
 * marker is never a loss, so a fresh Redis (or a loss while this instance could not see Redis) is not reported.
 */
public final class RedisMemoryWatch implements SmartLifecycle {
    static final String NO_EVICTION = "noeviction";
    static final String DOCS = "docs/operations/redis.md";
    private static final String UNREADABLE = "";
    private static final Logger log = LoggerFactory.getLogger(RedisMemoryWatch.class);

    private final Supplier<StoreConnection> redis;
    private final RedisMasters masters;
    private final boolean allowEviction;
    private final Duration interval;
    private final Duration checkTimeout;
    private final int replicaAcks;
    private final Runnable countLoss;

    /** Master name to its policy as last read (UNREADABLE when Redis refused both ways of reading it). */
    private final Map<String, String> policies = new ConcurrentHashMap<>();
    /** Marker key to the epoch it held when last read. */
    private final Map<String, String> epochs = new ConcurrentHashMap<>();
    private final Set<String> persistenceRead = ConcurrentHashMap.newKeySet();
    private final Set<String> markerRefused = ConcurrentHashMap.newKeySet();
    private final AtomicLong losses = new AtomicLong();
    private volatile String lastLoss;
    private volatile boolean started;
    private final PeriodicRounds checking;

    /**
     * @param checkTimeout how long one check (the one at startup too) may take before it is given up
     * @param replicaAcks  {@code idempotency.replica-acks}: replicas that must acknowledge each write
     * @param countLoss    counts one memory loss (the {@code idempotency.store.memory-lost} counter)
     */
    RedisMemoryWatch(Supplier<StoreConnection> redis, RedisMasters masters, boolean allowEviction,
            Duration interval, Duration checkTimeout, int replicaAcks, Runnable countLoss) {
        this.redis = redis;
        this.masters = masters;
        this.allowEviction = allowEviction;
        this.interval = interval;
        this.checkTimeout = checkTimeout;
        this.checking = PeriodicRounds.every("Redis memory checks", interval, interval, tick -> check())
                .boundedBy(checkTimeout);
        this.replicaAcks = replicaAcks;
        this.countLoss = countLoss;
    }

    /**
     * @param connections the markers are written on the store's connection, the masters read (policy, persistence,
     *                    a Cluster's topology) through Spring Data's template, which addresses a node
     * @param singleName  how a single Redis (or Sentinel's master) is named in the logs and in health
     */
    public static RedisMemoryWatch on(PreopenedConnections connections, boolean cluster, String singleName,
            boolean allowEviction, Duration interval, Duration checkTimeout, int replicaAcks, Runnable countLoss) {
        return new RedisMemoryWatch(connections::store, new RedisMasters(connections.template(), cluster, singleName),
                allowEviction, interval, checkTimeout, replicaAcks, countLoss);
    }

    private record Reading(Master master, String policy) {
    }

    /** One check of every master: policy, persistence (once per master), memory marker. */
    Mono<Void> check() {
        return masters.list().concatMap(master -> policy(master).map(policy -> new Reading(master, policy)))
                .collectList()
                .flatMap(readings -> {
                    onPolicies(readings);
                    epochs.keySet().retainAll(readings.stream().map(r -> markerKey(r.master())).toList());
                    return Flux.fromIterable(readings)
                            .concatMap(reading -> persistence(reading.master()).then(marker(reading.master())))
                            .then();
                });
    }

    private Mono<String> policy(Master master) {
        return masters.config(master, "maxmemory-policy").mapNotNull(config -> value(config, "maxmemory-policy"))
                .onErrorResume(WakeUpChannel::refusedByRedis, refused -> Mono.empty())
                // CONFIG renamed or denied (managed services): INFO memory says it too
                .switchIfEmpty(Mono.defer(() -> masters.info(master, "memory")
                        .mapNotNull(info -> value(info, "maxmemory_policy"))
                        .onErrorResume(WakeUpChannel::refusedByRedis, refused -> Mono.empty())))
                .defaultIfEmpty(UNREADABLE);
    }

    private void onPolicies(List<Reading> readings) {
        Map<String, String> evicting = new TreeMap<>();
        for (Reading reading : readings) {
            String name = reading.master().name();
            String previous = policies.put(name, reading.policy());
            if (reading.policy().equals(previous)) {
                continue;
            }
            if (reading.policy().equals(UNREADABLE)) {
                log.warn("Could not read the maxmemory-policy of Redis {}: CONFIG GET and INFO memory were both "
                        + "refused. Make sure it is noeviction, or records may be evicted and duplicates let through "
                        + "(see {}); the gateway goes on", name, DOCS);
            } else if (evicts(reading.policy())) {
                evicting.put(name, reading.policy());
            } else if (previous != null && evicts(previous)) {
                log.info("Redis {} no longer evicts keys: maxmemory-policy {}", name, reading.policy());
            }
        }
        if (evicting.isEmpty()) {
            return;
        }
        if (allowEviction) {
            log.warn("Redis evicts keys ({}): idempotency records may be forgotten before their retention ends, and "
                    + "a retry of a request already forwarded forwarded again; accepted by "
                    + "idempotency.store.allow-eviction=true (see {})", describe(evicting), DOCS);
        } else if (!started) {
            throw new EvictingRedis(evicting);
        } else {
            log.error("Redis evicts keys ({}): idempotency records may be forgotten before their retention ends, and "
                    + "a retry of a request already forwarded forwarded again. Set CONFIG SET maxmemory-policy "
                    + "noeviction on it (on a managed Redis: its parameter group), or accept it with "
                    + "idempotency.store.allow-eviction=true (see {})", describe(evicting), DOCS);
        }
    }

    static boolean evicts(String policy) {
        return !policy.equals(UNREADABLE) && !policy.equals(NO_EVICTION);
    }

    private static String describe(Map<String, String> policies) {
        StringBuilder text = new StringBuilder();
        policies.forEach((name, policy) -> text.append(text.isEmpty() ? "" : ", ").append(name)
                .append(" maxmemory-policy ").append(policy));
        return text.toString();
    }

    /** Once per master: what a restart of it would keep. Unknown parts (CONFIG refused) are not guessed. */
    private Mono<Void> persistence(Master master) {
        if (persistenceRead.contains(master.name())) {
            return Mono.empty();
        }
        Mono<Optional<String>> save = masters.config(master, "save")
                .map(config -> Optional.ofNullable(value(config, "save")))
                .onErrorResume(WakeUpChannel::refusedByRedis, refused -> Mono.just(Optional.empty()));
        Mono<Properties> persistence = masters.info(master, "persistence")
                .onErrorResume(WakeUpChannel::refusedByRedis, refused -> Mono.just(new Properties()));
        Mono<Properties> replication = masters.info(master, "replication")
                .onErrorResume(WakeUpChannel::refusedByRedis, refused -> Mono.just(new Properties()));
        return Mono.zip(save, persistence, replication).doOnNext(read -> {
            persistenceRead.add(master.name());
            String aof = value(read.getT2(), "aof_enabled");
            String replicas = value(read.getT3(), "connected_slaves");
            boolean noAof = "0".equals(aof);
            boolean noRdb = read.getT1().map(String::isBlank).orElse(false);
            boolean noReplicaAcks = "0".equals(replicas) || replicas != null && replicaAcks == 0;
            if (noAof && noRdb && noReplicaAcks) {
                log.warn("Redis {} keeps the idempotency records in memory only: no AOF (appendonly no), no RDB "
                        + "snapshots (save \"\"), {}. A restart of it forgets every record, and a retry of a request "
                        + "already forwarded would be forwarded again (see {})", master.name(),
                        "0".equals(replicas) ? "no replica"
                                : replicas + " replica(s) but none acknowledging writes (idempotency.replica-acks=0)",
                        DOCS);
            }
        }).then();
    }

    private Mono<Void> marker(Master master) {
        String key = markerKey(master);
        return StoreConnection.run(redis, new StoreScripts.MemoryMarker(key, UUID.randomUUID().toString()))
                .doOnNext(epoch -> onEpoch(master, key, epoch))
                .onErrorResume(WakeUpChannel::refusedByRedis, refused -> {
                    if (markerRefused.add(master.name())) {
                        log.warn("Redis {} refused the memory marker {} ({}): a loss of its memory will not be "
                                + "detected", master.name(), key, refused.toString());
                    }
                    return Mono.empty();
                })
                .then();
    }

    private void onEpoch(Master master, String key, String epoch) {
        String known = epochs.put(key, epoch);
        if (known == null || known.equals(epoch)) {
            return; // first sight (a fresh Redis, or this instance just started): nothing to compare with
        }
        losses.incrementAndGet();
        lastLoss = master.name() + " at " + Instant.now();
        countLoss.run();
        log.error("Redis {} lost its memory: its marker {} was gone (a restart without persistence, a failover to "
                + "an empty replica, FLUSHALL). Every idempotency record it held is forgotten: a retry of a request "
                + "already forwarded is forwarded again, and an unsettled exchange is not recognised. Marker "
                + "re-armed (see {})", master.name(), key, DOCS);
    }

    static String markerKey(Master master) {
        return memoryMarkerKey(master.tag());
    }

    /** CONFIG GET and INFO on a Cluster node may prefix the names with the node: either is accepted. */
    private static String value(Properties properties, String name) {
        String value = properties.getProperty(name);
        if (value != null) {
            return value;
        }
        return properties.stringPropertyNames().stream().filter(key -> key.endsWith("." + name)).findFirst()
                .map(properties::getProperty).orElse(null);
    }

    /** Masters whose {@code maxmemory-policy} evicts, as last read (accepted by allow-eviction or not). */
    public int evictingMasters() {
        return (int) policies.values().stream().filter(RedisMemoryWatch::evicts).count();
    }

    /** What health shows: evicting masters and memory losses seen since this instance started; empty when none. */
    public Map<String, Object> details() {
        Map<String, Object> details = new LinkedHashMap<>();
        Map<String, String> evicting = new TreeMap<>();
        policies.forEach((name, policy) -> {
            if (evicts(policy)) {
                evicting.put(name, policy);
            }
        });
        if (!evicting.isEmpty()) {
            details.put("evictingMasters", evicting);
            details.put("eviction", allowEviction
                    ? "accepted (idempotency.store.allow-eviction=true): evicted records let duplicates through"
                    : "records may be evicted and their retries forwarded again: set maxmemory-policy noeviction");
        }
        long lost = losses.get();
        if (lost > 0) {
            details.put("memoryLosses", lost);
            details.put("lastMemoryLoss", lastLoss);
        }
        return details;
    }

    /** Checks once, within the check timeout: an evicting Redis stops the startup, an unreachable one does not. */
    @Override
    public void start() {
        try {
            check().timeout(checkTimeout).block();
        } catch (EvictingRedis refused) {
            throw refused;
        } catch (RuntimeException unanswered) {
            log.warn("Could not check at startup whether Redis can forget records ({}): checked every {} until it "
                    + "answers", unanswered.toString(), interval);
        }
        started = true;
        checking.start();
    }

    @Override
    public void stop() {
        checking.stop();
    }

    @Override
    public boolean isRunning() {
        return checking.isRunning();
    }

    /** Before the web server starts (DEFAULT_PHASE - 1024): nothing is served by a gateway that refuses to start. */
    @Override
    public int getPhase() {
        return SmartLifecycle.DEFAULT_PHASE - 2048;
    }
}
