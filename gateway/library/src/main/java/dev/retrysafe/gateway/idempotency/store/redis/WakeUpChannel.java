package dev.retrysafe.gateway.idempotency.store.redis;

import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.shardChannelOfTag;
import static dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.CLASSIC_CHANNEL;

import io.lettuce.core.RedisCommandExecutionException;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Where the settling scripts publish a record's wake-up (the message is the record's scope hash, and it is only
 * published when someone waits).
 */
public enum WakeUpChannel {
    /**
     * Redis 7 and later: {@code SPUBLISH} to the shard channel of the record's Cluster slot,
     * {@code idempotency:settled:{<slot tag>}}. On a Cluster it stays within the slot's shard (its master and
     * replicas) instead of crossing the cluster bus to every node, and only instances waiting in that slot subscribe
     * to it. A script may only publish to a shard channel of its keys' slot, hence the slot tag.
     */
    SHARDED,
    /** Before Redis 7 (no {@code SPUBLISH}): {@code PUBLISH} to {@code idempotency:settled}, received by every instance. */
    CLASSIC;

    private static final int FIRST_SHARDED_VERSION = 7;
    private static final Logger log = LoggerFactory.getLogger(WakeUpChannel.class);

    /** The channel the wake-up of the record {@code scopeHash} is published on. */
    public String channelOf(String scopeHash) {
        return this == SHARDED ? shardChannelOfTag(RedisKeyspace.slotTag(scopeHash)) : CLASSIC_CHANNEL;
    }

    /** The scripts' three wake-up arguments: channel, message (the scope hash), whether to SPUBLISH. */
    ScriptCall.WakeUp wakeUp(String scopeHash) {
        return new ScriptCall.WakeUp(channelOf(scopeHash), scopeHash, this == SHARDED);
    }

    /**
     * SHARDED when every server answering {@code INFO server} (on a Cluster: every node, so a half-upgraded Cluster
     * stays CLASSIC) runs Redis 7 or later; a script's SPUBLISH on an older node would fail the whole step. A Redis
     * that refuses INFO (an ACL without it) gets CLASSIC, which works everywhere; one that cannot be asked fails the
     * Mono.
     */
    static Mono<WakeUpChannel> detect(ReactiveRedisConnectionFactory connections) {
        // On a Cluster, Spring Data's connection asks every node and answers one list of their INFO.
        return Flux.usingWhen(Mono.fromSupplier(connections::getReactiveConnection),
                        connection -> connection.serverCommands().info("server"), ReactiveRedisConnection::closeLater)
                .next()
                .map(WakeUpChannel::forServers)
                .onErrorResume(WakeUpChannel::refusedByRedis, e -> {
                    log.warn("Wake-ups use the classic channel: INFO server was refused ({})", e.toString());
                    return Mono.just(CLASSIC);
                });
    }

    /** An error reply of Redis itself, as opposed to a connection that failed or timed out. */
    static boolean refusedByRedis(Throwable e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof RedisCommandExecutionException) {
                return true;
            }
        }
        return false;
    }

    /** From INFO's properties: {@code redis_version} alone, or one per node prefixed {@code host:port.} on a Cluster. */
    static WakeUpChannel forServers(Properties info) {
        int lowest = info.stringPropertyNames().stream()
                .filter(name -> name.equals("redis_version") || name.endsWith(".redis_version"))
                .mapToInt(name -> major(info.getProperty(name)))
                .min().orElse(0);
        WakeUpChannel channel = lowest >= FIRST_SHARDED_VERSION ? SHARDED : CLASSIC;
        log.info("Wake-ups use {} channels (lowest redis_version major: {})", channel.name().toLowerCase(), lowest);
        return channel;
    }

    private static int major(String version) {
        try {
            return Integer.parseInt(version.trim().split("\\.")[0]);
        } catch (RuntimeException unreadable) {
            return 0;
        }
    }
}
