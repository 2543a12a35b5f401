package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.background.PeriodicRounds;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.springframework.beans.factory.DisposableBean;
import reactor.core.publisher.Mono;

/**
 * Keeps the leases of this instance's in-flight requests alive: one ticker for the whole instance renews each lease
 * once a third of it has passed, so a slow but live request is never taken over. A renewal that fails (a passing
 * Redis fault, no answer within store-timeout) is tried again at the next tick, not a third of a lease later: two
 * failures in a row would otherwise let a live exchange's lease lapse. A per-request timer would cost
 * every request a scheduled task; most requests end long before their first renewal is due. The same ticker is the
 * exchanges' stall watchdog: a lease is renewed only for an exchange that shows progress, so that no bug and no
 * client can keep a record IN_FLIGHT for longer than its stall limit plus one lease.
 */
public final class LeaseRenewals implements DisposableBean {
    private final IdempotencyStore store;
    private final Map<OwnerToken, Held> held = new ConcurrentHashMap<>();
    private final PeriodicRounds ticker;
    private volatile boolean ticking;
    private volatile boolean destroyed;

    public LeaseRenewals(IdempotencyStore store, Duration tick) {
        this.store = store;
        this.ticker = PeriodicRounds.every("lease renewals", tick, tick, t -> Mono.fromRunnable(this::renewDue));
    }

    /** Holds the lease until {@link Hold#release()}, or until the watched exchange stalls. */
    public Hold hold(IdempotencyScope scope, OwnerToken owner, Duration lease, Duration storeTimeout, Watch watch) {
        // Started by the first lease held and stopped only when the bean is destroyed, unlike the other background
        // work, which the context's lifecycle starts and stops: leases must be renewed while the web server drains its
        // exchanges in a graceful shutdown, which ends after every lifecycle phase above it has stopped.
        if (!ticking && !destroyed) {
            ticking = true;
            ticker.start();
        }
        Held entry = new Held(scope, lease, storeTimeout, watch);
        entry.nextRenewal = System.nanoTime() + lease.toNanos() / 3;
        held.put(owner, entry);
        return () -> held.remove(owner);
    }

    private void renewDue() {
        long now = System.nanoTime();
        held.forEach((owner, entry) -> {
            long quiet = now - entry.watch.lastProgressNanos().getAsLong();
            if (quiet > entry.watch.stallLimit().get().toNanos()) {
                if (held.remove(owner, entry)) {
                    entry.watch.onStall().accept(Duration.ofNanos(quiet));
                }
                return;
            }
            if (entry.nextRenewal <= now && !entry.renewing) {
                entry.renewing = true;
                // On failure nextRenewal stays due: the next tick tries again.
                StoreCall.within(entry.storeTimeout, () -> store.renew(entry.scope, owner, entry.lease))
                        .subscribe(stillOurs -> {
                            if (stillOurs) {
                                entry.nextRenewal = System.nanoTime() + entry.lease.toNanos() / 3;
                            } else {
                                // Settled (or taken): nothing to renew, but the exchange may still hang on a
                                // client write; the watchdog keeps watching it until it ends.
                                entry.nextRenewal = Long.MAX_VALUE;
                            }
                        }, e -> entry.renewing = false, () -> entry.renewing = false);
            }
        });
    }

    /** Whether its ticker runs: from the first lease held until the bean is destroyed. */
    boolean isTicking() {
        return ticker.isRunning();
    }

    @Override
    public void destroy() {
        destroyed = true;
        ticker.stop();
    }

    /** A held lease. */
    public interface Hold {
        void release();
    }

    /**
     * What the watchdog looks at: when the exchange last made progress, how long it may go without (now: the limit
     * may change as the exchange moves on), and what to do when it went without for longer (called once, after which
     * the lease is no longer renewed).
     */
    public record Watch(LongSupplier lastProgressNanos, Supplier<Duration> stallLimit, Consumer<Duration> onStall) {
    }

    private static final class Held {
        final IdempotencyScope scope;
        final Duration lease;
        final Duration storeTimeout;
        final Watch watch;
        volatile long nextRenewal;
        volatile boolean renewing;

        Held(IdempotencyScope scope, Duration lease, Duration storeTimeout, Watch watch) {
            this.scope = scope;
            this.watch = watch;
            this.lease = lease;
            this.storeTimeout = storeTimeout;
        }
    }
}
