package dev.retrysafe.gateway.idempotency.background;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;

/**
 * One round of the fleet's claimed work (process polls, lookups at the upstream): claims again as long as a claim
 * found some and the round is within its bound. One claim per tick capped an instance's share at one batch per
 * interval (process polls measured about 160 a second), whatever the rate of new work: a backlog only grew.
 */
public final class ClaimRound {
    private ClaimRound() {
    }

    /**
     * @param claim    one claim and the work on what it claimed; emits how much it claimed (0 on a failure)
     * @param bound    how long the round may go on claiming (the claims' lease: past it they would lapse anyway)
     * @param stopping the worker is stopping: no further claim
     * @return how much the round claimed in all
     */
    public static Mono<Integer> whileFound(Supplier<Mono<Integer>> claim, Duration bound, BooleanSupplier stopping) {
        return Mono.defer(() -> {
            long until = System.nanoTime() + bound.toNanos();
            return Mono.defer(claim).expand(found -> found > 0 && !stopping.getAsBoolean()
                            && System.nanoTime() - until < 0 ? Mono.defer(claim) : Mono.empty())
                    .reduce(0, Integer::sum);
        });
    }
}
