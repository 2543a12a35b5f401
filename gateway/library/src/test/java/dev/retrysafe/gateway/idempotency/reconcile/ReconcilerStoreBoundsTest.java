package dev.retrysafe.gateway.idempotency.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.record.StorableHeaders;
import dev.retrysafe.gateway.idempotency.store.ReconcileQueue;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** A Redis that takes a claim or a settle and never answers holds a reconciliation round no longer than a store call. */
class ReconcilerStoreBoundsTest {
    static final Duration STORE_TIMEOUT = Duration.ofMillis(200);
    /** Far above the bound, far below Lettuce's own 60 s: the round ends by the store timeout, not by luck. */
    static final Duration WAIT = Duration.ofSeconds(20);
    static final ReconcileQueue.DueLookup DUE = new ReconcileQueue.DueLookup("scope-hash", "orders",
            "http://127.0.0.1:1", Map.of("key", "order-1"), "owner", 1L);

    final AtomicInteger settles = new AtomicInteger();
    Reconciler reconciler;

    @AfterEach
    void stop() {
        reconciler.destroy();
    }

    @Test
    void aClaimWithoutAnAnswerEndsTheRoundWithNothingClaimed() {
        reconciler = reconciler(new SilentQueue(Flux.never()));

        assertThat(reconciler.reconcileDueNow().block(WAIT)).isZero();
    }

    @Test
    void aSettleWithoutAnAnswerEndsTheRound() {
        // The upstream's port is closed: the lookup fails at once, and its "ask again later" settle never answers.
        reconciler = reconciler(new SilentQueue(Flux.just(DUE)));

        assertThat(reconciler.reconcileDueNow().block(WAIT)).isEqualTo(1);
        assertThat(settles).hasValue(1);
    }

    private Reconciler reconciler(ReconcileQueue queue) {
        Reconciler made = new Reconciler(Optional.of(queue), WebClient.create(), Duration.ofHours(1),
                Duration.ofSeconds(5), Duration.ofMinutes(5), STORE_TIMEOUT, Duration.ofHours(1),
                new IdempotencyMetrics(new SimpleMeterRegistry()));
        made.reconcile("orders", new Reconciler.RouteLookup(new Reconciliation(LookupTemplate.parse("/orders/{key}"),
                Optional.empty(), 200, 404, Map.of(), List.of()), new StorableHeaders(Set.of()), 1024,
                Duration.ofHours(1), Optional.empty()));
        return made;
    }

    /** Claims what it is given once, then never answers a settle: a Redis gone quiet after the claim. */
    private final class SilentQueue implements ReconcileQueue {
        private final AtomicReference<Flux<DueLookup>> claimed;

        SilentQueue(Flux<DueLookup> claimed) {
            this.claimed = new AtomicReference<>(claimed);
        }

        @Override
        public Flux<DueLookup> claimDue(int max, Duration claim) {
            return claimed.getAndSet(Flux.empty());
        }

        @Override
        public Mono<Integer> restoreLostSlots(Duration interval) {
            return Mono.just(0);
        }

        @Override
        public Mono<Boolean> settle(DueLookup due, LookupResult result) {
            settles.incrementAndGet();
            return Mono.never();
        }
    }
}
