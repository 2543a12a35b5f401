package dev.retrysafe.gateway.idempotency.filter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.RedisStoreContractFixture;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.redis.RedisStoreBuilder;
import dev.retrysafe.gateway.idempotency.store.redis.RedisWakeUps;
import dev.retrysafe.gateway.idempotency.store.redis.StoreConnection;
import dev.retrysafe.gateway.idempotency.store.redis.WakeUpChannel;
import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.http.HttpStatusCode;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.publisher.Hooks;

/**
 * How many Reactor operators a guarded request assembles (issue 24 point 2): each is an object, a subscription and a
 * context walk on the hot path, and the profile puts a third of a request's CPU in Reactor. Counted with Reactor's
 * assembly hook over a first write and a replay through the filter on the Redis store (a real redis-server, the
 * store's own Lettuce connection), the upstream a stub answering 202. The counts are printed with where the
 * operators are assembled; the assertions are the budgets the code meets today, so that a change that adds
 * operators to the hot path has to say so here.
 */
class OperatorCountTest {
    /**
     * Operators of a first write (reserve, forward, capture, complete) and of a replay (reserve only), today: 113 and
     * 72 before issue 24's flattening (wake-up arguments and the store's connection as plain values, one error
     * operator for the body read and for the reservation, the complete's retry assembled only after a failure),
     * the mock exchange and the stub upstream's own included (about 25); then one more per Redis call for
     * coalesced writes (the store's connection subscribes the command itself to flush after it), which save far more
     * than an operator costs.
     */
    static final int FIRST_WRITE_BUDGET = 95;
    static final int REPLAY_BUDGET = 62;

    static RedisProcess redis;
    static LettuceConnectionFactory factory;
    static StoreConnection connection;
    static RedisWakeUps wakeUps;

    final IdempotencyGatewayFilterTest helpers = new IdempotencyGatewayFilterTest();
    final Map<String, LongAdder> assembled = new ConcurrentHashMap<>();
    volatile boolean counting;

    @BeforeAll
    static void startRedis() {
        redis = RedisProcess.start();
        factory = redis.connect(RedisStoreContractFixture.AS_THE_GATEWAY);
        connection = StoreConnection.open(factory);
        wakeUps = RedisWakeUps.on(factory, new SettleSignals(), WakeUpChannel.CLASSIC);
        wakeUps.channel().block(IdempotencyGatewayFilterTest.WAIT);
    }

    @AfterAll
    static void stopRedis() {
        connection.close();
        factory.destroy();
        redis.close();
    }

    @AfterEach
    void removeHook() {
        Hooks.resetOnEachOperator(getClass().getName());
        helpers.stopLeaseRenewals();
    }

    @Test
    void aFirstWriteAndAReplayStayWithinTheirOperatorBudgets() {
        IdempotencyStore store = RedisStoreBuilder.plain(connection, wakeUps);
        GatewayFilter filter = helpers.factory(IdempotencyGatewayFilterTest.defaults(false), store)
                .apply(new IdempotencyGatewayFilterFactory.Config());
        Hooks.onEachOperator(getClass().getName(), publisher -> {
            // The background loop's ticks (lease renewals, samplers) run when they are due, not per request.
            if (counting && !onTheBackgroundLoop()) {
                assembled.computeIfAbsent(assembler(), where -> new LongAdder()).increment();
            }
            return publisher;
        });
        // Warm: scripts loaded, lazy state built, the key's first request out of the way.
        send(filter, "warm-up-" + System.nanoTime(), 202);
        // A result's store call may end after its answer: each count holds the request's store calls, whole.
        helpers.awaitSettled();

        String key = "counted-" + System.nanoTime();
        long firstWrite = count(() -> {
            send(filter, key, 202);
            helpers.awaitSettled();
        }, "first write");
        long replay = count(() -> send(filter, key, 200), "replay");

        assertThat(firstWrite).as("operators assembled by a first write").isLessThanOrEqualTo(FIRST_WRITE_BUDGET);
        assertThat(replay).as("operators assembled by a replay").isLessThanOrEqualTo(REPLAY_BUDGET);
    }

    long count(Runnable request, String what) {
        assembled.clear();
        counting = true;
        try {
            request.run();
        } finally {
            counting = false;
        }
        long total = assembled.values().stream().mapToLong(LongAdder::sum).sum();
        Map<String, Long> byPlace = new TreeMap<>(assembled.entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, entry -> entry.getValue().sum())));
        System.out.println("Reactor operators assembled by a " + what + ": " + total + " " + byPlace);
        return total;
    }

    void send(GatewayFilter filter, String key, int expectedStatus) {
        MockServerWebExchange exchange = helpers.through(filter, IdempotencyGatewayFilterTest.post()
                .header("Idempotency-Key", key).body(IdempotencyGatewayFilterTest.BODY));
        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(expectedStatus));
    }

    /** The first class outside Reactor on the assembling thread's stack: who asked for the operator. */
    static boolean onTheBackgroundLoop() {
        return StackWalker.getInstance().walk(frames -> frames.anyMatch(
                frame -> frame.getClassName().startsWith("dev.retrysafe.gateway.idempotency.background.")));
    }

    static String assembler() {
        return StackWalker.getInstance().walk(frames -> frames
                .map(StackWalker.StackFrame::getClassName)
                .filter(name -> !name.startsWith("reactor.core.") && !name.startsWith(OperatorCountTest.class.getName()))
                .findFirst()
                .map(name -> name.replaceFirst("^dev\\.retrysafe\\.gateway\\.idempotency\\.", "")
                        .replaceFirst("\\$.*", ""))
                .orElse("?"));
    }
}
