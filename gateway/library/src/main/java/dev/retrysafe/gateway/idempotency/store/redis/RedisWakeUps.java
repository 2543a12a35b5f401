package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import java.time.Duration;
import java.util.List;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import reactor.core.publisher.Mono;

/**
 * One gateway instance's wake-ups over Redis: the channel the settling scripts publish on, chosen once from the
 * servers' version ({@link WakeUpChannel}), and what the instance listens to. On shard channels (Redis 7 and later),
 * the slots it has waiters in ({@link ShardSubscriptions}). Always the classic channel too: wake-ups from instances
 * that publish there (before Redis 7, or an older gateway during a rolling upgrade) still arrive, and while nobody
 * publishes on it that subscription costs nothing.
 */
public final class RedisWakeUps implements SmartLifecycle {
    private final SettleSignals signals;
    private final Mono<WakeUpChannel> channel;
    private final RedisSettleSubscription classic;
    /** Null without Lettuce, which alone offers SSUBSCRIBE here: then the channel is always CLASSIC. */
    private final ShardSubscriptions shards;
    private volatile WakeUpChannel decided;

    private RedisWakeUps(ReactiveRedisConnectionFactory connections, SettleSignals signals,
            Mono<WakeUpChannel> channel, ShardSubscriptions shards) {
        this.signals = signals;
        this.shards = shards;
        this.classic = new RedisSettleSubscription(connections, signals);
        // Decided by the first answer and kept; an unreachable Redis is asked again by the next caller.
        this.channel = channel.doOnNext(decision -> decided = decision)
                .cache(c -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO);
    }

    /** Shard channels when every Redis server runs version 7 or later and the client is Lettuce, else classic. */
    public static RedisWakeUps on(ReactiveRedisConnectionFactory connections, SettleSignals signals) {
        if (!(connections instanceof LettuceConnectionFactory lettuce)) {
            return new RedisWakeUps(connections, signals, Mono.just(WakeUpChannel.CLASSIC), null);
        }
        return new RedisWakeUps(connections, signals,
                Mono.defer(() -> WakeUpChannel.detect(new ReactiveStringRedisTemplate(connections))),
                ShardSubscriptions.on(lettuce, signals::signal));
    }

    /** On the channel given, whatever the servers' version: to test each path on one Redis. */
    public static RedisWakeUps on(LettuceConnectionFactory connections, SettleSignals signals, WakeUpChannel channel) {
        return new RedisWakeUps(connections, signals, Mono.just(channel),
                ShardSubscriptions.on(connections, signals::signal));
    }

    /** The channel this instance's scripts publish on, once Redis has answered. */
    public Mono<WakeUpChannel> channel() {
        return channel;
    }

    /** The three wake-up arguments of a settling script for the record {@code scopeHash}. */
    Mono<List<byte[]>> scriptArgs(String scopeHash) {
        return channel.map(decision -> decision.scriptArgs(scopeHash));
    }

    /**
     * A waiter for the record {@code scopeHash}; on shard channels it also holds this instance's subscription to the
     * record's slot until it is closed, and {@link SettleWaiter#listening()} says when that subscription is live.
     * (Registered before the channel was decided, which takes the first answer of Redis, it relies on the classic
     * channel and its own timeout.)
     */
    public SettleWaiter register(String scopeHash) {
        SettleWaiter local = signals.register(scopeHash);
        if (decided != WakeUpChannel.SHARDED || shards == null) {
            return local;
        }
        ShardSubscriptions.Lease lease = shards.listen(scopeHash);
        return new SettleWaiter() {
            @Override
            public Mono<Void> settled() {
                return local.settled();
            }

            @Override
            public Mono<Void> listening() {
                return lease.subscribed();
            }

            @Override
            public void close() {
                lease.close();
                local.close();
            }
        };
    }

    /** A record this instance settled: its own waiters need not wait for the pub/sub round trip. */
    void settledHere(String scopeHash) {
        signals.signal(scopeHash);
    }

    /** Completes once the classic channel's subscription is live. */
    public Mono<Void> classicSubscribed() {
        return classic.subscribed();
    }

    /** Slots this instance subscribes to (or lingers on); for tests. */
    public int subscribedSlots() {
        return shards == null ? 0 : shards.slots();
    }

    @Override
    public void start() {
        classic.start();
        // Decided now rather than by the first request; a Redis still down is asked again later.
        channel.subscribe(null, unreachable -> { });
    }

    @Override
    public void stop() {
        classic.stop();
        if (shards != null) {
            shards.close();
        }
    }

    @Override
    public boolean isRunning() {
        return classic.isRunning();
    }
}
