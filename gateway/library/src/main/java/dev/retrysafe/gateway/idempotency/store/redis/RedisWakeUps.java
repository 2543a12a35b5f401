package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.StoreCall;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * One gateway instance's wake-ups over Redis: the channel the settling scripts publish on, chosen once from the
 * servers' version ({@link WakeUpChannel}), and what the instance listens to. On shard channels (Redis 7 and later),
 * the slots it has waiters in ({@link ShardSubscriptions}). Always the classic channel too: wake-ups from instances
 * that publish there (before Redis 7, or an older gateway during a rolling upgrade) still arrive, and while nobody
 * publishes on it that subscription costs nothing.
 */
public final class RedisWakeUps implements SmartLifecycle {
    /** How long an instance that could not ask Redis its version publishes on the classic channel before asking again. */
    static final Duration ASK_AGAIN_AFTER = Duration.ofSeconds(10);
    private static final Logger log = LoggerFactory.getLogger(RedisWakeUps.class);

    private final SettleSignals signals;
    /** Kept once Redis answered; a failed attempt is not kept. */
    private final Mono<WakeUpChannel> detection;
    private final RedisSettleSubscription classic;
    /** Null without Lettuce, which alone offers SSUBSCRIBE here: then the channel is always CLASSIC. */
    private final ShardSubscriptions shards;
    private volatile WakeUpChannel decided;
    private volatile long askAgainAt = System.nanoTime();
    private final AtomicBoolean detecting = new AtomicBoolean();

    private RedisWakeUps(ReactiveRedisConnectionFactory connections, SettleSignals signals,
            Mono<WakeUpChannel> channel, ShardSubscriptions shards) {
        this.signals = signals;
        this.shards = shards;
        this.classic = new RedisSettleSubscription(connections, signals);
        this.detection = channel.doOnNext(decision -> decided = decision)
                .cache(c -> Duration.ofMillis(Long.MAX_VALUE), e -> Duration.ZERO, () -> Duration.ZERO);
    }

    /** Shard channels when every Redis server runs version 7 or later and the client is Lettuce, else classic. */
    public static RedisWakeUps on(ReactiveRedisConnectionFactory connections, SettleSignals signals) {
        if (!(connections instanceof LettuceConnectionFactory lettuce)) {
            return new RedisWakeUps(connections, signals, Mono.just(WakeUpChannel.CLASSIC), null);
        }
        return new RedisWakeUps(connections, signals,
                // Bounded: an INFO that never answers would leave the channel undecided for good.
                StoreCall.within(ASK_AGAIN_AFTER,
                        () -> WakeUpChannel.detect(connections)),
                ShardSubscriptions.on(lettuce, signals::signal));
    }

    /** On the channel given, whatever the servers' version: to test each path on one Redis. */
    public static RedisWakeUps on(LettuceConnectionFactory connections, SettleSignals signals, WakeUpChannel channel) {
        return new RedisWakeUps(connections, signals, Mono.just(channel),
                ShardSubscriptions.on(connections, signals::signal));
    }

    /**
     * The channel this instance's scripts publish on once decided, waiting for the detection if it is not (for
     * startup and tests; the store's steps use {@link #wakeUp}, which never waits): decided by Redis's first
     * answer and kept. Until then CLASSIC,
     * which every instance listens to: a store step never fails because the version could not be asked (a Cluster
     * node down answers no INFO), and Redis is asked again after {@link #ASK_AGAIN_AFTER}.
     */
    public Mono<WakeUpChannel> channel() {
        WakeUpChannel known = decided;
        if (known != null) {
            return Mono.just(known);
        }
        if (System.nanoTime() - askAgainAt < 0) {
            return Mono.just(WakeUpChannel.CLASSIC);
        }
        return detection.onErrorResume(e -> {
            askAgainAt = System.nanoTime() + ASK_AGAIN_AFTER.toNanos();
            log.warn("Wake-ups use the classic channel until Redis says its version ({}); asking again in {} s",
                    e.toString(), ASK_AGAIN_AFTER.toSeconds());
            return Mono.just(WakeUpChannel.CLASSIC);
        });
    }

    /**
     * The three wake-up arguments of a settling script for the record {@code scopeHash}, at once: a store step never
     * waits for the version check (an INFO that is slow or never answers would hold every request). Until it is
     * decided, CLASSIC, and the check is asked again in the background. Plain values, not a Mono: two operators
     * less on every store step of a request.
     */
    ScriptCall.WakeUp wakeUp(String scopeHash) {
        WakeUpChannel known = decided;
        if (known == null) {
            detectInBackground();
            known = WakeUpChannel.CLASSIC;
        }
        return known.wakeUp(scopeHash);
    }

    /** One detection at a time, none within {@link #ASK_AGAIN_AFTER} of a failed one. */
    private void detectInBackground() {
        if (System.nanoTime() - askAgainAt < 0 || !detecting.compareAndSet(false, true)) {
            return;
        }
        // Subscribed off the caller's thread: asking may open a connection, synchronously, on the subscribing one.
        channel().subscribeOn(Schedulers.boundedElastic()).doFinally(signal -> detecting.set(false)).subscribe();
    }

    /**
     * A waiter for the record {@code scopeHash}; on shard channels it also holds this instance's subscription to the
     * record's slot until it is closed, and {@link SettleWaiter#listening()} says when that subscription is live.
     * (Registered before the channel was decided, it hears the classic channel, on which this instance then
     * publishes too; a shard-channel wake-up of another instance only reaches it through its own timeout.)
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
        detectInBackground();
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
