package dev.retrysafe.gateway.idempotency.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.record.StorableHeaders;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A round of lookups claims again while its claims find due records, as a round of process polls does: a backlog of
 * UNCERTAIN records (a burst of upstream timeouts) drains in rounds, not one batch of 32 per interval.
 */
class ReconcilerRoundTest {
    static final Duration WAIT = Duration.ofSeconds(30);
    static final int BACKLOG = 5_000;

    Reconciler reconciler;

    @AfterEach
    void stop() {
        reconciler.destroy();
    }

    @Test
    void oneRoundClaimsAgainUntilNothingIsDue() {
        BacklogQueue queue = new BacklogQueue(BACKLOG);
        reconciler = new Reconciler(Optional.of(queue), WebClient.create(), Duration.ofHours(1), Duration.ofSeconds(5),
                Duration.ofMinutes(5), Duration.ofSeconds(5), Duration.ofHours(1),
                new IdempotencyMetrics(new SimpleMeterRegistry()));
        // The records keep no value for {key}: each lookup is settled "failed, ask later" without an HTTP call.
        reconciler.reconcile("orders", new Reconciler.RouteLookup(new Reconciliation(LookupTemplate.parse(
                "/orders/{key}"), Optional.empty(), 200, 404, Map.of(), List.of()), new StorableHeaders(Set.of()), 1024,
                Duration.ofHours(1), Optional.empty()));

        assertThat(reconciler.reconcileDueNow().block(WAIT)).isEqualTo(BACKLOG);
        assertThat(queue.due).isEmpty();
        int claimsWithWork = (BACKLOG + Reconciler.BATCH - 1) / Reconciler.BATCH;
        assertThat(queue.claims.get()).as("the claims that found work and the empty one that ends the round")
                .isEqualTo(claimsWithWork + 1);
        assertThat(queue.settled).hasValue(BACKLOG);
    }

    /** Hands each due lookup out once, as the Redis queue's claim does. */
    static final class BacklogQueue implements ReconcileQueue {
        final Queue<DueLookup> due = new ConcurrentLinkedQueue<>();
        final AtomicInteger claims = new AtomicInteger();
        final AtomicInteger settled = new AtomicInteger();

        BacklogQueue(int size) {
            for (int i = 0; i < size; i++) {
                due.add(new DueLookup("scope-" + i, "orders", "http://127.0.0.1:1", Map.of(), "owner", 1L));
            }
        }

        @Override
        public Flux<DueLookup> claimDue(int max, Duration claim) {
            claims.incrementAndGet();
            List<DueLookup> claimed = new ArrayList<>();
            for (DueLookup next; claimed.size() < max && (next = due.poll()) != null; ) {
                claimed.add(next);
            }
            return Flux.fromIterable(claimed);
        }

        /** Its queue has no directory to lose. */
        @Override
        public Mono<Integer> restoreLostSlots(Duration interval) {
            return Mono.just(0);
        }

        @Override
        public Mono<Boolean> settle(DueLookup lookup, LookupResult result) {
            settled.incrementAndGet();
            return Mono.just(true);
        }
    }
}
