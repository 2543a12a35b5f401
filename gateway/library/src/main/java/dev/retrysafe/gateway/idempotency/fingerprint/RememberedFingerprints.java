package dev.retrysafe.gateway.idempotency.fingerprint;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The fingerprints of the last JSON requests seen, by the SHA-256 of their raw bytes: a retry usually resends the
 * very bytes it sent first, and hashing those is several times cheaper than parsing and putting them in canonical
 * form again (about 10 us per KB). Only a hash and its fingerprints are kept, never a body.
 * <p>
 * Bounded by two generations of at most {@code capacity / 2} entries each: when the young one is full the old one
 * is dropped, so an entry used again survives (it is copied to the young generation on a hit) and memory never
 * exceeds {@code capacity} entries (about 400 bytes each), without a lock. Thread-safe.
 */
final class RememberedFingerprints {

    private final int generationSize;
    private volatile ConcurrentHashMap<RawDigest, Fingerprints> young = new ConcurrentHashMap<>();
    private volatile ConcurrentHashMap<RawDigest, Fingerprints> old = new ConcurrentHashMap<>();

    RememberedFingerprints(int capacity) {
        if (capacity < 2) {
            throw new IllegalArgumentException("remembered-fingerprints must be 0 (off) or at least 2, was " + capacity);
        }
        this.generationSize = capacity / 2;
    }

    Fingerprints computeIfAbsent(byte[] rawRequestDigest, Supplier<Fingerprints> fingerprint) {
        RawDigest key = RawDigest.of(rawRequestDigest);
        Fingerprints known = young.get(key);
        if (known != null) {
            return known;
        }
        known = old.get(key);
        Fingerprints result = known != null ? known : fingerprint.get();
        remember(key, result);
        return result;
    }

    int size() {
        return young.size() + old.size();
    }

    private void remember(RawDigest key, Fingerprints fingerprint) {
        ConcurrentHashMap<RawDigest, Fingerprints> current = young;
        if (current.size() >= generationSize) {
            synchronized (this) {
                if (young == current) {
                    old = current;
                    young = new ConcurrentHashMap<>();
                }
            }
        }
        young.put(key, fingerprint);
    }

    /** A SHA-256 as four longs: equals and hashCode without touching an array. */
    private record RawDigest(long a, long b, long c, long d) {
        static RawDigest of(byte[] sha256) {
            ByteBuffer bytes = ByteBuffer.wrap(sha256);
            return new RawDigest(bytes.getLong(), bytes.getLong(), bytes.getLong(), bytes.getLong());
        }
    }
}
