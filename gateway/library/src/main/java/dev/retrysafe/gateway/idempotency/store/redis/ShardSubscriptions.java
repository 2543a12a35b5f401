package dev.retrysafe.gateway.idempotency.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * This instance's subscriptions to wake-up shard channels ({@code SSUBSCRIBE}, Redis 7): one per Cluster slot in
 * which it has a waiter, taken when the slot's first waiter registers and dropped {@link #LINGER} after its last one
 * has gone, so that the instance receives the wake-ups of the slots it waits in and no others. Spring's listener
 * container has no {@code SSUBSCRIBE}: this is Lettuce's own pub/sub connection, from the client Spring configured
 * (password, TLS, client name); on a Cluster, Lettuce sends each {@code SSUBSCRIBE} to the master owning the slot and
 * follows {@code MOVED}.
 *
 * <p>A subscription can be lost: Redis drops the shard subscriptions of a slot that leaves a master (moved, or the
 * master demoted) and tells the subscriber with an {@code SUNSUBSCRIBE}; a master that dies takes them with it. The
 * first is subscribed again at once, the second at the slot's next registration once Lettuce's topology names
 * another owner. While a slot is being moved that new {@code SSUBSCRIBE} can be refused: the old master already
 * answers {@code MOVED} to the new one, which until it is told it owns the slot answers {@code MOVED} back, and
 * Lettuce gives up after its few redirects within milliseconds. So an attempt that fails while the slot still has
 * waiters is tried again after {@link #RETRY_FIRST}, doubling up to {@link #RETRY_MAX}, until one is acknowledged or
 * the last waiter has gone. A wake-up lost meanwhile costs latency, never correctness: a waiter re-reads the record
 * when its wait ends.
 */
final class ShardSubscriptions implements AutoCloseable {
    /** Long enough for a burst of waits in one slot to share one subscription, short enough to stop listening soon. */
    static final Duration LINGER = Duration.ofSeconds(2);
    /** After a failed attempt in a slot that has waiters: short, as a slot between two masters settles in moments. */
    static final Duration RETRY_FIRST = Duration.ofMillis(50);
    /** The longest pause between attempts, for a slot whose master stays unreachable. */
    static final Duration RETRY_MAX = Duration.ofSeconds(1);

    private final Mono<StatefulRedisPubSubConnection<String, String>> connection;
    private final Duration linger;
    private final Consumer<String> wakeUp;
    /** By slot tag; guarded by {@code this}. */
    private final Map<String, Slot> slots = new HashMap<>();
    private volatile StatefulRedisPubSubConnection<String, String> connected;

    ShardSubscriptions(Supplier<Mono<StatefulRedisPubSubConnection<String, String>>> connect, Duration linger,
            Consumer<String> wakeUp) {
        this.linger = linger;
        this.wakeUp = wakeUp;
        // Connected on first use and kept while open; a failed attempt or a closed connection (Redis client
        // stopped and started again) is not kept: the next registration connects again.
        this.connection = Mono.defer(connect).doOnNext(this::listenTo)
                .cacheInvalidateIf(pubSub -> !pubSub.isOpen());
    }

    /** On the Redis of Spring's Lettuce client: standalone, Sentinel (Lettuce follows the master) or Cluster. */
    static ShardSubscriptions on(LettuceConnectionFactory connections, Consumer<String> wakeUp) {
        return new ShardSubscriptions(() -> connect(connections.getRequiredNativeClient()), LINGER, wakeUp);
    }

    @SuppressWarnings("unchecked")
    private static Mono<StatefulRedisPubSubConnection<String, String>> connect(AbstractRedisClient client) {
        if (client instanceof RedisClusterClient cluster) {
            return Mono.fromCompletionStage(() -> cluster.connectPubSubAsync(StringCodec.UTF8))
                    .map(StatefulRedisPubSubConnection.class::cast);
        }
        // Without a URI of its own the standalone client has no asynchronous connect: off the event loop.
        return Mono.fromCallable(() -> ((RedisClient) client).connectPubSub(StringCodec.UTF8))
                .subscribeOn(Schedulers.boundedElastic());
    }

    private void listenTo(StatefulRedisPubSubConnection<String, String> pubSub) {
        connected = pubSub;
        pubSub.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void smessage(String channel, String scopeHash) {
                wakeUp.accept(scopeHash);
            }

            @Override
            public void sunsubscribed(String channel, long count) {
                dropped(channel);
            }
        });
    }

    /**
     * Keeps the shard channel of the record's slot subscribed until the returned lease is closed. Its
     * {@link Lease#subscribed()} completes once Redis has acknowledged the subscription (at once when the slot
     * already was), from when on every wake-up published in the slot reaches this instance.
     */
    Lease listen(String scopeHash) {
        String tag = RedisKeyspace.slotTag(scopeHash);
        synchronized (this) {
            Slot slot = slots.computeIfAbsent(tag, Slot::new);
            slot.leases++;
            if (slot.linger != null) {
                slot.linger.dispose();
                slot.linger = null;
            }
            Mono<Void> subscription = slot.subscription;
            if (subscription == null || ownerChanged(slot)) {
                // An attempt that fails at once has cleared slot.subscription by the time subscribe returns: the
                // lease keeps the failed attempt (the waiter's own timeout is then its wake-up), never a null.
                subscription = subscribe(slot);
            }
            return new Lease(slot, subscription);
        }
    }

    /** Number of slots subscribed or being subscribed (lingering ones included); for tests. */
    synchronized int slots() {
        return slots.size();
    }

    /** Under the lock. */
    private Mono<Void> subscribe(Slot slot) {
        String channel = RedisKeyspace.shardChannelOfTag(slot.tag);
        Mono<Void> attempt = connection
                .flatMap(pubSub -> Mono.fromCompletionStage(pubSub.async().ssubscribe(channel)))
                .then().cache();
        slot.subscription = attempt;
        slot.acknowledged = false;
        if (slot.retry != null) {
            slot.retry.dispose();
            slot.retry = null;
        }
        attempt.subscribe(null, failed -> settled(slot, attempt, false), () -> settled(slot, attempt, true));
        return attempt;
    }

    private synchronized void settled(Slot slot, Mono<Void> attempt, boolean acknowledged) {
        if (slot.subscription != attempt) {
            return;
        }
        if (acknowledged) {
            slot.acknowledged = true;
            slot.failures = 0;
            slot.owner = ownerOf(slot.number);
            return;
        }
        slot.subscription = null; // the next registration in the slot tries again, and so does a retry
        if (slot.leases > 0 && slots.get(slot.tag) == slot) {
            // Waiters are already listening on it: without a retry they would only have their own timeout.
            long delay = Math.min(RETRY_MAX.toMillis(), RETRY_FIRST.toMillis() << Math.min(slot.failures, 20));
            slot.failures++;
            slot.retry = Mono.delay(Duration.ofMillis(delay)).subscribe(tick -> retry(slot));
        }
    }

    private synchronized void retry(Slot slot) {
        if (slot.leases > 0 && slots.get(slot.tag) == slot && slot.subscription == null) {
            subscribe(slot);
        }
    }

    /** Redis said the channel is no longer subscribed: in answer to ours, or because the slot left its master. */
    private synchronized void dropped(String channel) {
        String tag = RedisKeyspace.tagOfShardChannel(channel);
        Slot slot = tag == null ? null : slots.get(tag);
        // Ours removed the slot before it was sent; one racing a newer SSUBSCRIBE finds it unacknowledged.
        if (slot == null || !slot.acknowledged) {
            return;
        }
        slot.subscription = null;
        if (slot.leases > 0) {
            subscribe(slot);
        }
    }

    /** On a Cluster: Lettuce's topology names another master for the slot than the one that acknowledged. */
    private boolean ownerChanged(Slot slot) {
        if (!slot.acknowledged || slot.owner == null) {
            return false;
        }
        String now = ownerOf(slot.number);
        return now != null && !now.equals(slot.owner);
    }

    private String ownerOf(int slotNumber) {
        if (connected instanceof StatefulRedisClusterPubSubConnection<String, String> cluster
                && cluster.getPartitions() != null) {
            RedisClusterNode node = cluster.getPartitions().getMasterBySlot(slotNumber);
            return node == null ? null : node.getNodeId();
        }
        return null;
    }

    private synchronized void released(Slot slot) {
        if (--slot.leases == 0 && slots.get(slot.tag) == slot) {
            if (slot.retry != null) {
                slot.retry.dispose();
                slot.retry = null;
            }
            slot.linger = Mono.delay(linger).subscribe(tick -> expire(slot));
        }
    }

    private synchronized void expire(Slot slot) {
        if (slot.leases > 0 || slots.get(slot.tag) != slot) {
            return;
        }
        slots.remove(slot.tag);
        StatefulRedisPubSubConnection<String, String> pubSub = connected;
        if (slot.subscription != null && pubSub != null && pubSub.isOpen()) {
            pubSub.async().sunsubscribe(RedisKeyspace.shardChannelOfTag(slot.tag));
        }
    }

    @Override
    public void close() {
        StatefulRedisPubSubConnection<String, String> pubSub = connected;
        connected = null;
        synchronized (this) {
            slots.values().forEach(slot -> {
                if (slot.linger != null) {
                    slot.linger.dispose();
                }
                if (slot.retry != null) {
                    slot.retry.dispose();
                }
            });
            slots.clear();
        }
        if (pubSub != null) {
            pubSub.closeAsync();
        }
    }

    /** One slot's subscription. Fields guarded by the enclosing instance. */
    private static final class Slot {
        final String tag;
        final int number;
        int leases;
        /** The SSUBSCRIBE in flight or acknowledged; null when never sent, failed or lost. */
        Mono<Void> subscription;
        boolean acknowledged;
        /** On a Cluster, the master that owned the slot when the subscription was acknowledged. */
        String owner;
        Disposable linger;
        /** The next attempt after a failed one, while the slot has waiters. */
        Disposable retry;
        /** Attempts failed in a row, for the pause before the next. */
        int failures;

        Slot(String tag) {
            this.tag = tag;
            this.number = SlotHash.getSlot(tag);
        }
    }

    /** One waiter's hold on its slot's subscription. */
    final class Lease implements AutoCloseable {
        private final Slot slot;
        private final Mono<Void> subscribed;
        private boolean closed;

        private Lease(Slot slot, Mono<Void> subscribed) {
            this.slot = slot;
            this.subscribed = subscribed.onErrorComplete();
        }

        /** Completes once Redis acknowledged the subscription, or it failed (then only the waiter's timeout helps). */
        Mono<Void> subscribed() {
            return subscribed;
        }

        @Override
        public void close() {
            synchronized (ShardSubscriptions.this) {
                if (closed) {
                    return;
                }
                closed = true;
                released(slot);
            }
        }
    }
}
