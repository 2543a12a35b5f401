package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.RedisStoreContractFixture;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.FleetQueueKeys;
import dev.retrysafe.gateway.idempotency.store.StoreCallNotSent;
import dev.retrysafe.gateway.idempotency.support.Marks;
import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.publisher.Flux;

/**
 * The store's own connection ({@link StoreConnection}) as the auto-configuration opens it ({@link
 * PreopenedConnections}): one command per call, scripts by SHA with their body sent only after {@code NOSCRIPT}, no
 * connection asked of Spring's factory per call, and a call refused before it was written said to be unsent. On a
 * real redis-server.
 */
class StoreConnectionTest {
    static final Duration WAIT = Duration.ofSeconds(10);
    static final LettuceClientConfiguration AS_THE_GATEWAY = RedisStoreContractFixture.AS_THE_GATEWAY;
    static RedisProcess redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @Test
    void aReserveIsOneEvalshaAndAScriptRedisForgotIsSentOnceWithItsBody() {
        List<String> sent = new CopyOnWriteArrayList<>();
        LettuceConnectionFactory factory = redis.connect(AS_THE_GATEWAY);
        try {
            // Before the connection is opened: Lettuce tells listeners of connections opened afterwards.
            factory.getNativeClient().addListener(new CommandListener() {
                @Override
                public void commandStarted(CommandStartedEvent event) {
                    sent.add(event.getCommand().getType().toString());
                }
            });
            StoreConnection connection = StoreConnection.open(factory);
            RedisIdempotencyStore store = RedisStoreBuilder.plain(connection, wakeUps(factory));
            reserve(store);
            sent.clear();

            reserve(store);
            assertThat(sent).as("a reserve, its script known").containsExactly("EVALSHA");

            factory.getConnection().scriptingCommands().scriptFlush();
            sent.clear();
            assertThat(reserve(store)).isInstanceOf(Reservation.Reserved.class);
            assertThat(sent).as("after NOSCRIPT, the body once").containsExactly("EVALSHA", "EVAL");

            sent.clear();
            reserve(store);
            assertThat(sent).as("kept by Redis from the EVAL").containsExactly("EVALSHA");
        } finally {
            factory.destroy();
        }
    }

    @Test
    void theStoresCallsAskSpringsFactoryForNoConnection() {
        AtomicInteger asked = new AtomicInteger();
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration("127.0.0.1", redis.port()), AS_THE_GATEWAY) {
            // What each template call asks for, under the factory's lock.
            @Override
            protected StatefulConnection<ByteBuffer, ByteBuffer> getSharedReactiveConnection() {
                asked.incrementAndGet();
                return super.getSharedReactiveConnection();
            }
        };
        factory.afterPropertiesSet();
        factory.start();
        PreopenedConnections connections = new PreopenedConnections(factory, true);
        try {
            connections.start();
            assertThat(connections.isOpen()).isTrue();
            RedisIdempotencyStore store = storeOn(connections, factory);
            int atStartup = asked.get();
            assertThat(atStartup).as("the shared connection, opened at startup: the counter counts").isPositive();

            IdempotencyScope scope = scope();
            OwnerToken owner = OwnerToken.random();
            assertThat(store.reserve(request(scope, owner)).block(WAIT)).isInstanceOf(Reservation.Reserved.class);
            assertThat(store.renew(scope, owner, Duration.ofSeconds(30)).block(WAIT)).isTrue();
            assertThat(store.complete(accepted(scope, owner, "p-1")).block(WAIT))
                    .isEqualTo(IdempotencyStore.CompletionResult.STORED);
            assertThat(store.processEnded("route", "p-1", "COMPLETED", Duration.ofHours(1)).block(WAIT)).isTrue();
            IdempotencyScope released = scope();
            OwnerToken other = OwnerToken.random();
            store.reserve(request(released, other)).block(WAIT);
            assertThat(store.release(released, other).block(WAIT)).isEqualTo(IdempotencyStore.SettleResult.DONE);
            IdempotencyScope uncertain = scope();
            store.reserve(request(uncertain, other)).block(WAIT);
            assertThat(store.markUncertain(Marks.uncertain(uncertain, other, "upstream timed out", Duration.ofHours(1))).block(WAIT))
                    .isEqualTo(IdempotencyStore.SettleResult.DONE);

            assertThat(asked.get()).as("connections asked of Spring's factory by the store's calls")
                    .isEqualTo(atStartup);
        } finally {
            connections.close();
            factory.destroy();
        }
    }

    @Test
    void untilTheStoresConnectionIsOpenACallIsRefusedUnsent() {
        LettuceConnectionFactory factory = redis.connect(AS_THE_GATEWAY);
        // Not started: as while the opener is still trying, in the background.
        PreopenedConnections connections = new PreopenedConnections(factory, true);
        try {
            RedisIdempotencyStore store = storeOn(connections, factory);

            assertThatThrownBy(() -> reserve(store)).isInstanceOf(StoreCallNotSent.class)
                    .hasMessageContaining("not open yet");
        } finally {
            connections.close();
            factory.destroy();
        }
    }

    @Test
    void aCallLettuceRejectsWhileDisconnectedWasNotSent() {
        RedisProcess own = RedisProcess.start();
        LettuceConnectionFactory factory = own.connect(AS_THE_GATEWAY);
        try {
            StoreConnection connection = StoreConnection.open(factory);
            RedisIdempotencyStore store = RedisStoreBuilder.plain(connection, wakeUps(factory));
            reserve(store);
            own.close();
            Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                    .filter(tick -> !connection.isOpen()).next().block(WAIT);

            assertThatThrownBy(() -> reserve(store)).isInstanceOf(StoreCallNotSent.class)
                    .hasMessageContaining("not connected");
        } finally {
            factory.destroy();
        }
    }

    @Test
    void afterTheApplicationStopsAndStartsAgainTheStoresConnectionIsOpenedAnew() {
        // As Spring pauses a cached test context and resumes it, or an application context is stopped and started:
        // Spring's factory shuts its client down with it, and the store's connection came from that client.
        LettuceConnectionFactory factory = redis.connect(AS_THE_GATEWAY);
        PreopenedConnections connections = new PreopenedConnections(factory, true);
        try {
            connections.start();
            RedisIdempotencyStore store = storeOn(connections, factory);
            reserve(store);

            connections.stop();
            factory.stop();
            assertThatThrownBy(() -> reserve(store)).as("stopped").isInstanceOf(StoreCallNotSent.class);
            factory.start();
            connections.start();

            assertThat(connections.isOpen()).isTrue();
            assertThat(store.reserve(request(scope(), OwnerToken.random())).block(WAIT))
                    .isInstanceOf(Reservation.Reserved.class);
        } finally {
            connections.close();
            factory.destroy();
        }
    }

    @Test
    void theStoresConnectionIsClosedWithTheApplication() {
        LettuceConnectionFactory factory = redis.connect(AS_THE_GATEWAY);
        PreopenedConnections connections = new PreopenedConnections(factory, true);
        try {
            connections.start();
            StoreConnection connection = connections.store();
            assertThat(connection.isOpen()).isTrue();

            connections.close();

            assertThat(connection.isOpen()).isFalse();
        } finally {
            factory.destroy();
        }
    }

    @Test
    void concurrentCallsQueuedBeforeAFlushGoToRedisInOneWrite() throws Exception {
        assertThat(flushesOfFiftyCalls(true)).as("flushes of 50 calls queued together").isEqualTo(1);
    }

    @Test
    void withoutCoalescingEachCallIsFlushedOnItsOwn() throws Exception {
        assertThat(flushesOfFiftyCalls(false)).as("flushes of 50 calls").isGreaterThanOrEqualTo(50);
    }

    /**
     * The fleet queues' claim, as the reconciler and the process poller run it: the directory's claim, then one
     * claim per slot chained on the replies, each batch followed by the slot's next look. Every claimed slot must
     * come back as a batch. A reply that came before the chain asked for it was dropped (the call completed empty),
     * about half the slots in a round of 64: those got no batch and no next look, and their work waited a whole claim
     * lease (15 s), with two instances often more than one.
     */
    @Test
    void everySlotTheDirectoryClaimedComesBackAsABatch() {
        LettuceConnectionFactory factory = redis.connect(AS_THE_GATEWAY);
        try {
            for (boolean coalesceWrites : new boolean[] {true, false}) {
                StoreConnection connection = StoreConnection.open(factory, coalesceWrites);
                FleetQueueKeys keys = RedisKeyspace.LOOKUPS;
                RedisFleetQueue queue = new RedisFleetQueue(() -> connection, null, keys);
                for (int round = 0; round < 20; round++) {
                    List<String> due = Flux.range(0, 64).map(i -> "r" + i + "t" + UUID.randomUUID()).collectList()
                            .block(WAIT);
                    // Due since long ago: a look asked for "now" may be a millisecond ahead of the claim's clock.
                    List<String> tagAndTime = new ArrayList<>();
                    due.forEach(tag -> tagAndTime.addAll(List.of(tag, "1")));
                    StoreConnection.run(() -> connection, new StoreScripts.SlotsRestore(keys.directory(), tagAndTime))
                            .block(WAIT);

                    List<String> batches = queue.claimDue(32, Duration.ofSeconds(15))
                            .concatMap(batch -> queue.lookNext(batch).thenReturn(batch.tag()))
                            .collectList().block(WAIT);

                    assertThat(batches).as("round %d, coalesced writes: %s", round, coalesceWrites)
                            .containsExactlyInAnyOrderElementsOf(due);
                }
                connection.close();
            }
        } finally {
            factory.destroy();
        }
    }

    /**
     * Fifty GETs queued one after the other on one thread (the flusher's own, when writes are coalesced, so that no
     * flush can run in between), all answered; the flushes the connection's channel saw meanwhile.
     */
    private static long flushesOfFiftyCalls(boolean coalesceWrites) throws Exception {
        LongAdder flushes = new LongAdder();
        ClientResources resources = ClientResources.builder().nettyCustomizer(new NettyCustomizer() {
            @Override
            public void afterChannelInitialized(Channel channel) {
                channel.pipeline().addFirst(new ChannelOutboundHandlerAdapter() {
                    @Override
                    public void flush(ChannelHandlerContext context) throws Exception {
                        flushes.increment();
                        super.flush(context);
                    }
                });
            }
        }).build();
        LettuceConnectionFactory factory = redis.connect(LettuceClientConfiguration.builder()
                .clientOptions(AS_THE_GATEWAY.getClientOptions().orElseThrow()).clientResources(resources).build());
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try {
            StoreConnection connection = StoreConnection.open(factory, coalesceWrites);
            connection.get("warm-up").block(WAIT);
            long before = flushes.sum();
            List<CompletableFuture<byte[]>> answers = new CopyOnWriteArrayList<>();
            Executor queueing = coalesceWrites ? connection.flusher() : caller;
            CompletableFuture.runAsync(() -> {
                for (int i = 0; i < 50; i++) {
                    answers.add(connection.get("absent-" + i).toFuture());
                }
            }, queueing).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            assertThat(answers).hasSize(50);
            return flushes.sum() - before;
        } finally {
            caller.shutdownNow();
            factory.destroy();
            resources.shutdown();
        }
    }

    /** The store as the auto-configuration makes it: on the connections' store connection, refused until it is open. */
    private static RedisIdempotencyStore storeOn(PreopenedConnections connections, LettuceConnectionFactory factory) {
        return new RedisIdempotencyStore(connections::store, wakeUps(factory), 1024, EncryptionKeys.none(),
                Optional.empty(), Duration.ofSeconds(1), RedisIdempotencyStore.RELEASED_OWNERS_TTL,
                Optional.empty());
    }

    private static RedisWakeUps wakeUps(LettuceConnectionFactory factory) {
        RedisWakeUps wakeUps = RedisWakeUps.on(factory, new SettleSignals(), WakeUpChannel.CLASSIC);
        wakeUps.channel().block(WAIT);
        return wakeUps;
    }

    private static Reservation reserve(RedisIdempotencyStore store) {
        return store.reserve(request(scope(), OwnerToken.random())).block(WAIT);
    }

    private static IdempotencyScope scope() {
        return new IdempotencyScope("t", "route", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    private static ReservationRequest request(IdempotencyScope scope, OwnerToken owner) {
        return new ReservationRequest(scope, Fingerprints.underNoRules(new Fingerprint("a".repeat(64))), owner, Duration.ofSeconds(30),
                Duration.ofHours(1), "http://upstream", false, false, "", "", Optional.empty());
    }

    private static Completion accepted(IdempotencyScope scope, OwnerToken owner, String processId) {
        StoredResponse response = new StoredResponse(202, List.of(),
                ("{\"processId\":\"" + processId + "\"}").getBytes(StandardCharsets.UTF_8), false);
        return new Completion(scope, owner, Fingerprints.underNoRules(new Fingerprint("a".repeat(64))), "http://upstream", response,
                Duration.ofHours(1), Optional.of(processId));
    }
}
