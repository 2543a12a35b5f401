package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** When a near copy may be served, and which fills are kept: on a clock the test moves. */
class NearCacheEntriesTest {
    static final Duration STALENESS = Duration.ofSeconds(1);
    static final Fingerprints FP = Fingerprints.underNoRules(new Fingerprint("a".repeat(64)));
    static final Fingerprints OTHER = Fingerprints.underNoRules(new Fingerprint("b".repeat(64)));
    final AtomicLong now = new AtomicLong(1_000_000_000L);
    final NearCacheEntries entries = new NearCacheEntries(10_000, 64L << 20, STALENESS, now::get);

    @Test
    void aCopyIsServedOnlyOnceTrackedAndFenced() {
        NearCacheEntries.Ticket early = entries.ticket("k");
        entries.keep(early, record(10), 60_000);
        assertThat(entries.replay("k", FP)).as("not tracked: nothing kept").isEmpty();

        entries.trackedFromNow();
        keep("k", 10);
        assertThat(entries.serving()).isFalse();
        assertThat(entries.replay("k", FP)).as("tracked, no fence answered yet").isEmpty();

        fence();
        assertThat(entries.replay("k", FP)).contains(record(10));
        assertThat(entries.replay("k", OTHER)).as("another intent asks Redis").isEmpty();
    }

    @Test
    void aFenceOlderThanTheBoundStopsServingUntilANewerOneIsAnswered() {
        tracked();
        keep("k", 10);
        long sent = now.get();
        entries.fenced(sent, entries.epoch());
        advance(STALENESS);
        assertThat(entries.replay("k", FP)).as("exactly at the bound").isPresent();
        advance(Duration.ofNanos(1));
        assertThat(entries.serving()).isFalse();
        assertThat(entries.replay("k", FP)).isEmpty();

        // A fence sent long ago and answered only now proves nothing newer than its sending.
        entries.fenced(sent - 1, entries.epoch());
        assertThat(entries.serving()).isFalse();
        fence();
        assertThat(entries.replay("k", FP)).isPresent();
    }

    @Test
    void aFenceOfAnEarlierEpochDoesNotCount() {
        tracked();
        long sent = now.get();
        long epoch = entries.epoch();
        entries.invalidatedAll();
        entries.fenced(sent, epoch);
        assertThat(entries.serving()).isFalse();
    }

    @Test
    void aFillRacedByAnInvalidationOfItsKeyOrOfEverythingIsNotKept() {
        tracked();
        fence();
        NearCacheEntries.Ticket ticket = entries.ticket("k");
        entries.invalidated("k");
        entries.keep(ticket, record(10), 60_000);
        assertThat(entries.replay("k", FP)).isEmpty();

        ticket = entries.ticket("k");
        entries.invalidatedAll();
        fence();
        entries.keep(ticket, record(10), 60_000);
        assertThat(entries.replay("k", FP)).isEmpty();

        ticket = entries.ticket("k");
        entries.untracked();
        entries.trackedFromNow();
        fence();
        entries.keep(ticket, record(10), 60_000);
        assertThat(entries.replay("k", FP)).as("sent before tracking was on again").isEmpty();

        ticket = entries.ticket("k");
        entries.invalidated("another key");
        entries.keep(ticket, record(10), 60_000);
        assertThat(entries.replay("k", FP)).as("another key's invalidation (or its stripe's) costs at most a fill")
                .isPresent();
    }

    @Test
    void anInvalidationDropsTheCopyAndALostTrackingDropsThemAll() {
        tracked();
        fence();
        keep("k", 10);
        keep("j", 10);
        entries.invalidated("k");
        assertThat(entries.replay("k", FP)).isEmpty();
        assertThat(entries.replay("j", FP)).isPresent();
        entries.untracked();
        entries.trackedFromNow();
        fence();
        assertThat(entries.replay("j", FP)).isEmpty();
        assertThat(entries.size()).isZero();
    }

    @Test
    void aCopyExpiresWhenItsRecordDoesCountedFromWhenItsReadWasSent() {
        tracked();
        NearCacheEntries.Ticket ticket = entries.ticket("k");
        advance(Duration.ofMillis(40));
        entries.keep(ticket, record(10), 100);
        advance(Duration.ofMillis(59));
        fence();
        assertThat(entries.replay("k", FP)).isPresent();
        advance(Duration.ofMillis(1));
        fence();
        assertThat(entries.replay("k", FP)).isEmpty();

        ticket = entries.ticket("gone");
        entries.keep(ticket, record(10), 0);
        entries.keep(entries.ticket("no ttl"), record(10), -1);
        assertThat(entries.size()).isZero();
    }

    @Test
    void entriesAreBoundedByCountAndByBytes() {
        NearCacheEntries byCount = new NearCacheEntries(10, 64L << 20, STALENESS, now::get);
        byCount.trackedFromNow();
        for (int i = 0; i < 100; i++) {
            byCount.keep(byCount.ticket("k" + i), record(10), 60_000);
        }
        assertThat(byCount.size()).isLessThanOrEqualTo(10).isPositive();

        NearCacheEntries byBytes = new NearCacheEntries(10_000, 10_000, STALENESS, now::get);
        byBytes.trackedFromNow();
        for (int i = 0; i < 100; i++) {
            byBytes.keep(byBytes.ticket("k" + i), record(3_000), 60_000);
        }
        assertThat(byBytes.size()).isLessThanOrEqualTo(3).isPositive();

        byBytes.keep(byBytes.ticket("huge"), record(20_000), 60_000);
        assertThat(byBytes.replay("huge", FP)).as("larger than the whole bound").isEmpty();
    }

    private void tracked() {
        entries.trackedFromNow();
    }

    private void fence() {
        entries.fenced(now.get(), entries.epoch());
    }

    private void keep(String key, int bodyBytes) {
        entries.keep(entries.ticket(key), record(bodyBytes), 60_000);
    }

    private void advance(Duration by) {
        now.addAndGet(by.toNanos());
    }

    private static IdempotencyRecord record(int bodyBytes) {
        return IdempotencyRecord.completed(FP, new StoredResponse(202, List.of(), new byte[bodyBytes], false));
    }
}
