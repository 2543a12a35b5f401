package dev.retrysafe.gateway.idempotency.store;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The local side of the in-flight wake-up: requests waiting on a scope hash share one sink, fired once when a
 * signal for that hash arrives. Waiting holds no thread and does no polling; a thousand waiters on one key are a
 * thousand subscribers to one sink.
 */
public final class SettleSignals {
    private final ConcurrentMap<String, Slot> slots = new ConcurrentHashMap<>();

    public SettleWaiter register(String scopeHash) {
        // holders is only changed inside compute(), which holds the map's lock for this key.
        Slot slot = slots.compute(scopeHash, (hash, existing) -> {
            Slot s = existing == null ? new Slot() : existing;
            s.holders++;
            return s;
        });
        return new Waiter(scopeHash, slot);
    }

    public void signal(String scopeHash) {
        Slot slot = slots.remove(scopeHash);
        if (slot != null) {
            slot.sink.tryEmitEmpty();
        }
    }

    /** Number of requests waiting on one scope hash; for tests and metrics. */
    public int waiters(String scopeHash) {
        Slot slot = slots.get(scopeHash);
        return slot == null ? 0 : slot.holders;
    }

    /** Number of scope hashes with at least one waiter; for tests and metrics. */
    public int waitingScopes() {
        return slots.size();
    }

    private static final class Slot {
        final Sinks.Empty<Void> sink = Sinks.empty();
        volatile int holders;
    }

    private final class Waiter implements SettleWaiter {
        private final String scopeHash;
        private final Slot slot;
        private boolean closed;

        Waiter(String scopeHash, Slot slot) {
            this.scopeHash = scopeHash;
            this.slot = slot;
        }

        @Override
        public Mono<Void> settled() {
            return slot.sink.asMono();
        }

        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            slots.computeIfPresent(scopeHash, (hash, current) -> current == slot && --current.holders == 0 ? null : current);
        }
    }
}
