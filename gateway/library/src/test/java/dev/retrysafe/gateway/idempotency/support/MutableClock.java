package dev.retrysafe.gateway.idempotency.support;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock that stands still until a test moves it: leases lapse and records expire in the
 * {@link InMemoryIdempotencyStore} when the test says so, without sleeping. Thread-safe; millisecond resolution,
 * like the Redis server's clock that the real store reads.
 */
public final class MutableClock extends Clock {
    private final AtomicLong millis;
    private final ZoneId zone;

    public MutableClock(Instant start) {
        this(new AtomicLong(start.toEpochMilli()), ZoneOffset.UTC);
    }

    private MutableClock(AtomicLong millis, ZoneId zone) {
        this.millis = millis;
        this.zone = zone;
    }

    /** Moves the clock forward (never back: the store's deadlines assume time only grows). */
    public void advance(Duration time) {
        if (time.isNegative()) {
            throw new IllegalArgumentException("A clock only moves forward, not by " + time);
        }
        millis.addAndGet(time.toMillis());
    }

    @Override
    public long millis() {
        return millis.get();
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis.get());
    }

    @Override
    public ZoneId getZone() {
        return zone;
    }

    /** Same instant, shared: moving either clock moves both. */
    @Override
    public Clock withZone(ZoneId zone) {
        return new MutableClock(millis, zone);
    }
}
