package dev.retrysafe.gateway.idempotency.store.redis;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;

/**
 * The rules of the near cache, in plain Java: which settled records an instance keeps, and when it may answer a
 * replay from them. Redis tells the instance of every change of a key it read ({@code CLIENT TRACKING}); what it
 * cannot tell is that it is still telling. So a copy is served only while the tracking connection is known to be
 * tracked and a fence on it (a command sent at {@code sentAt}, answered) is at most {@code maxStaleness} old: Redis
 * writes an invalidation before any later reply on that connection, so every change made before the fence was sent
 * has been seen once its answer arrived. A replay served is at most {@code maxStaleness} behind Redis, whatever the
 * load or the network.
 *
 * <p>A fill (the record read on the tracking connection) holds a {@link Ticket} taken before it was sent: an
 * invalidation of its key, or of everything, that arrives before its answer cancels it, so a copy read before a change
 * is never kept after it. Entries are bounded by bytes and by count (each weighs at least {@code maxBytes/maxEntries})
 * and expire when their record does (the read's send time plus its {@code PTTL}).
 */
final class NearCacheEntries {
    static final int STRIPES = 1024;
    /** What an entry costs beside its body and headers: the key, the record, the map's own node. */
    static final int ENTRY_OVERHEAD = 256;

    private final Cache<String, Entry> entries;
    /** Invalidations seen per stripe of keys: a fill whose stripe moved while it was out is not kept. */
    private final AtomicLongArray changes = new AtomicLongArray(STRIPES);
    private final LongSupplier nanoTime;
    private final long maxStalenessNanos;
    /** Moved by every loss of tracking and every invalidation of everything: fills and fences of before are void. */
    private final AtomicLong epoch = new AtomicLong();
    private volatile boolean tracked;
    /** The newest answered fence: one of another epoch proves nothing. */
    private volatile Fence fence = new Fence(-1, 0);

    record Entry(IdempotencyRecord record, long expiresAt, int weight) {
    }

    private record Fence(long epoch, long sentAt) {
    }

    /** A fill on its way: its key, the epoch and the key's stripe count it was sent under, and when it was sent. */
    record Ticket(String key, long epoch, long changes, long sentAt) {
    }

    NearCacheEntries(long maxEntries, long maxBytes, Duration maxStaleness, LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
        this.maxStalenessNanos = maxStaleness.toNanos();
        long floor = Math.max(1, maxBytes / Math.max(1, maxEntries));
        this.entries = Caffeine.newBuilder()
                .maximumWeight(maxBytes)
                .<String, Entry>weigher((key, entry) -> (int) Math.max(floor, entry.weight()))
                .expireAfter(Expiry.<String, Entry>creating(
                        (key, entry) -> Duration.ofNanos(Math.max(0, entry.expiresAt() - nanoTime.getAsLong()))))
                .ticker(nanoTime::getAsLong)
                .executor(Runnable::run)
                .build();
    }

    /** The stored record for a replay of {@code request}, when a copy may be served; else empty: ask Redis. */
    Optional<IdempotencyRecord> replay(String key, Fingerprints request) {
        long now = nanoTime.getAsLong();
        if (!serving(now)) {
            return Optional.empty();
        }
        Entry entry = entries.getIfPresent(key);
        if (entry == null || entry.expiresAt() - now <= 0 || !request.sameIntentAs(entry.record().fingerprints())) {
            return Optional.empty();
        }
        return Optional.of(entry.record());
    }

    boolean serving() {
        return serving(nanoTime.getAsLong());
    }

    private boolean serving(long now) {
        Fence last = fence;
        return tracked && last.epoch() == epoch.get() && now - last.sentAt() <= maxStalenessNanos;
    }

    boolean tracked() {
        return tracked;
    }

    long epoch() {
        return epoch.get();
    }

    /** Taken before a fill is sent. */
    Ticket ticket(String key) {
        return new Ticket(key, epoch.get(), changes.get(stripe(key)), nanoTime.getAsLong());
    }

    /**
     * Keeps what a fill read, unless its key or everything changed while it was out, or it had no time left. The
     * check runs again after the put: an invalidation that raced it takes the copy back out.
     */
    void keep(Ticket ticket, IdempotencyRecord record, long ttlMillis) {
        if (ttlMillis <= 0 || !stillValid(ticket)) {
            return;
        }
        entries.put(ticket.key(), new Entry(record, ticket.sentAt() + Duration.ofMillis(ttlMillis).toNanos(),
                weight(ticket.key(), record)));
        if (!stillValid(ticket)) {
            entries.invalidate(ticket.key());
        }
    }

    private boolean stillValid(Ticket ticket) {
        return tracked && ticket.epoch() == epoch.get() && changes.get(stripe(ticket.key())) == ticket.changes();
    }

    /** Redis said the key changed (or this instance changed it). */
    void invalidated(String key) {
        changes.incrementAndGet(stripe(key));
        entries.invalidate(key);
    }

    /** Redis said everything changed (a flush), or what it says can no longer be trusted. */
    void invalidatedAll() {
        epoch.incrementAndGet();
        entries.invalidateAll();
    }

    /** The tracking connection is gone, or not known to be tracked: nothing is served, nothing kept. */
    void untracked() {
        tracked = false;
        invalidatedAll();
    }

    /**
     * Tracking is on from now on: keys read from now are reported. Fills sent before are void (their read may have
     * come before tracking); serving waits for a fence.
     */
    void trackedFromNow() {
        invalidatedAll();
        tracked = true;
    }

    /** A fence sent at {@code sentAt} in {@code epoch} was answered. */
    void fenced(long sentAt, long fenceEpoch) {
        Fence last = fence;
        if (tracked && fenceEpoch == epoch.get() && (last.epoch() != fenceEpoch || sentAt - last.sentAt() > 0)) {
            fence = new Fence(fenceEpoch, sentAt);
        }
    }

    long size() {
        entries.cleanUp();
        return entries.estimatedSize();
    }

    private static int stripe(String key) {
        return (key.hashCode() & 0x7fffffff) % STRIPES;
    }

    private static int weight(String key, IdempotencyRecord record) {
        long bytes = ENTRY_OVERHEAD + 2L * key.length();
        if (record.response().isPresent()) {
            StoredResponse response = record.response().get();
            bytes += response.body().length;
            for (ResponseHeader header : response.headers()) {
                bytes += 2L * (header.name().length() + header.value().length()) + 32;
            }
        }
        return (int) Math.min(Integer.MAX_VALUE, bytes);
    }
}
