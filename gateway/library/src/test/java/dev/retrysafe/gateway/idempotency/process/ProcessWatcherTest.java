package dev.retrysafe.gateway.idempotency.process;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import dev.retrysafe.gateway.idempotency.support.InMemoryIdempotencyStore;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * An instance's share of the fleet's process polls: it polls what the queue holds (whichever instance stored the
 * 202), only for routes it has, and stops when its application closes.
 */
class ProcessWatcherTest {
    static final Duration WAIT = Duration.ofSeconds(10);
    final ProcessTracking tracking = new ProcessTracking("/processes/{processId}", "/processId", "/status",
            Set.of("COMPLETED", "FAILED"), Duration.ofDays(7));
    final IdempotencyScope scope = new IdempotencyScope("t", "r", new IdempotencyKey("a-key-long-enough-1"));
    final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore().firstProcessPoll(Duration.ofMillis(5));
    final AtomicInteger statusReads = new AtomicInteger();
    /** The status resource says PENDING this many times, then COMPLETED. */
    final AtomicInteger pendingReads = new AtomicInteger(2);
    HttpServer status;
    ProcessWatcher watcher;

    @BeforeEach
    void statusResource() throws IOException {
        status = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        status.createContext("/processes/", exchange -> {
            statusReads.incrementAndGet();
            String state = pendingReads.getAndDecrement() > 0 ? "PENDING" : "COMPLETED";
            byte[] body = ("{\"status\":\"" + state + "\"}").getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        status.start();
        watcher = new ProcessWatcher(store, Optional.of(store), WebClient.create(), Duration.ofMillis(5),
                Duration.ofMillis(20), Duration.ofSeconds(60), ProcessWatcher.ROUND_LIMIT);
    }

    @AfterEach
    void stop() {
        watcher.destroy();
        status.stop(0);
    }

    @Test
    void aQueuedProcessIsPolledUntilItsStatusSaysItEnded() {
        watcher.track("r", tracking, Duration.ofHours(24));
        stored202(scope, "p-1");

        awaitEnded(scope);
        assertThat(statusReads).as("pending twice, then completed").hasValue(3);
        assertThat(store.processDueAt(scope)).as("out of the queue").isEmpty();
    }

    @Test
    void aRoundClaimsAgainWhileItFindsDuePollsNotOneBatchPerTick() {
        pendingReads.set(0);
        AtomicLong now = new AtomicLong(1_000_000);
        InMemoryIdempotencyStore queue = new InMemoryIdempotencyStore(now::get).firstProcessPoll(Duration.ofMillis(5));
        // Not started: the test runs the round itself.
        ProcessWatcher round = new ProcessWatcher(queue, Optional.of(queue), WebClient.create(), Duration.ofMillis(5),
                Duration.ofMillis(20), Duration.ofSeconds(60), ProcessWatcher.ROUND_LIMIT);
        round.stop();
        try {
            round.track("r", tracking, Duration.ofHours(24));
            int processes = ProcessWatcher.BATCH * 3 + 5;
            for (int i = 0; i < processes; i++) {
                stored202(queue, new IdempotencyScope("t", "r", new IdempotencyKey("a-key-long-enough-" + (100 + i))),
                        "p-" + i);
            }
            now.addAndGet(10);

            assertThat(round.pollDueNow().block(WAIT)).as("every due poll in one round").isEqualTo(processes);
            assertThat(statusReads).hasValue(processes);
        } finally {
            round.destroy();
        }
    }

    @Test
    void aRoundWhoseQueueNeverAnswersEndsAtItsLimitAndTheNextRoundStillRuns() {
        AtomicInteger asked = new AtomicInteger();
        ProcessQueue silent = new ProcessQueue() {
            @Override
            public Mono<Integer> pollDue(int max, Duration claim, Duration maxDelay,
                    Function<DueProcess, Mono<PollResult>> poll) {
                // The first round's Redis takes the claim and never answers; the next one answers.
                return asked.incrementAndGet() == 1 ? Mono.never() : Mono.just(0);
            }

            @Override
            public Mono<Integer> restoreLostSlots(Duration interval) {
                return Mono.just(0);
            }
        };
        ProcessWatcher bounded = new ProcessWatcher(store, Optional.of(silent), WebClient.create(), Duration.ofMillis(5),
                Duration.ofMillis(20), Duration.ofSeconds(60), Duration.ofMillis(200));
        try {
            bounded.track("r", tracking, Duration.ofHours(24));

            Flux.interval(Duration.ofMillis(10)).filter(tick -> asked.get() >= 2).next().block(WAIT);
        } finally {
            bounded.destroy();
        }
    }

    @Test
    void nothingIsPolledForARouteThisInstanceDoesNotHave() {
        watcher.track("r", tracking, Duration.ofHours(24));
        IdempotencyScope elsewhere = new IdempotencyScope("t", "another-route", new IdempotencyKey("a-key-long-enough-2"));
        stored202(elsewhere, "p-2");
        stored202(scope, "p-1");

        awaitEnded(scope);
        assertThat(store.record(elsewhere).orElseThrow().processEndedWith()).isEmpty();
        assertThat(store.processDueAt(elsewhere)).as("left queued for an instance that has the route").isPresent();
    }

    @Test
    void anInstanceWithoutATrackingRouteTakesNoShare() {
        assertThat(watcher.pollingShare()).isFalse();
        watcher.track("r", tracking, Duration.ofHours(24));
        assertThat(watcher.pollingShare()).isTrue();
    }

    @Test
    void theApplicationClosingStopsItsShareBeforeTheStoreGoesAway() {
        GenericApplicationContext context = new GenericApplicationContext();
        watcher.setApplicationContext(context);
        watcher.track("r", tracking, Duration.ofHours(24));

        watcher.onApplicationEvent(new ContextClosedEvent(context));

        assertThat(watcher.pollingShare()).isFalse();
        stored202(scope, "p-1");
        assertThat(watcher.pollDueNow().block(WAIT)).as("nothing claimed while closing").isZero();
        watcher.track("r", tracking, Duration.ofHours(24));
        assertThat(watcher.pollingShare()).as("not restarted by a route refresh while closing").isFalse();
    }

    @Test
    void aPausedContextStopsItsShareAndStartingItAgainResumesIt() {
        watcher.track("r", tracking, Duration.ofHours(24));
        assertThat(watcher.isRunning()).isTrue();

        // What Spring does to a cached test context it pauses: its Redis client is stopped too.
        watcher.stop();
        assertThat(watcher.isRunning()).isFalse();
        assertThat(watcher.pollingShare()).isFalse();
        watcher.track("r", tracking, Duration.ofHours(24));
        assertThat(watcher.pollingShare()).as("not restarted by a route refresh while paused").isFalse();

        watcher.start();
        assertThat(watcher.pollingShare()).isTrue();
        stored202(scope, "p-1");
        awaitEnded(scope);
    }

    @Test
    void theQueuesDirectoryIsRestoredOncePerRestoreIntervalNotEveryRound() {
        watcher.destroy();
        watcher = new ProcessWatcher(store, Optional.of(store), WebClient.create(), Duration.ofMillis(5),
                Duration.ofMillis(20), Duration.ofMillis(50), ProcessWatcher.ROUND_LIMIT);
        watcher.track("r", tracking, Duration.ofHours(24));

        Flux.interval(Duration.ofMillis(5)).onBackpressureDrop().filter(t -> store.restoreCalls() >= 3).next()
                .block(WAIT);
        // Ten rounds of 5 ms per interval of 50 ms: one restore in ten rounds, whatever the machine's pace.
        assertThat(store.pollDueCalls()).isGreaterThanOrEqualTo(store.restoreCalls() * 10 - 10);
    }

    @Test
    void noRestoreBeforeTheFirstIntervalHasPassed() {
        watcher.destroy();
        watcher = new ProcessWatcher(store, Optional.of(store), WebClient.create(), Duration.ofMillis(5),
                Duration.ofMillis(20), Duration.ofHours(1), ProcessWatcher.ROUND_LIMIT);
        watcher.track("r", tracking, Duration.ofHours(24));

        Flux.interval(Duration.ofMillis(5)).onBackpressureDrop().filter(t -> store.pollDueCalls() >= 20).next()
                .block(WAIT);
        assertThat(store.restoreCalls()).isZero();
    }

    @Test
    void aChildContextClosingStopsNothing() {
        GenericApplicationContext context = new GenericApplicationContext();
        GenericApplicationContext child = new GenericApplicationContext(context);
        watcher.setApplicationContext(context);
        watcher.track("r", tracking, Duration.ofHours(24));

        watcher.onApplicationEvent(new ContextClosedEvent(child));

        assertThat(watcher.pollingShare()).isTrue();
        stored202(scope, "p-1");
        awaitEnded(scope);
    }

    private void stored202(IdempotencyScope where, String processId) {
        stored202(store, where, processId);
    }

    private void stored202(InMemoryIdempotencyStore store, IdempotencyScope where, String processId) {
        StoredResponse accepted = new StoredResponse(202, List.of(),
                ("{\"processId\":\"" + processId + "\"}").getBytes(StandardCharsets.UTF_8), false);
        store.complete(new Completion(where, OwnerToken.random(), Fingerprints.underNoRules(new Fingerprint("a".repeat(64))), upstream(),
                accepted, Duration.ofDays(7), Optional.of(processId))).block(WAIT);
    }

    private void awaitEnded(IdempotencyScope where) {
        Flux.interval(Duration.ofMillis(5)).onBackpressureDrop()
                .filter(t -> store.record(where).flatMap(r -> r.processEndedWith()).isPresent())
                .next().block(WAIT);
        assertThat(store.record(where).orElseThrow().processEndedWith()).contains("COMPLETED");
    }

    private String upstream() {
        return "http://127.0.0.1:" + status.getAddress().getPort();
    }
}
