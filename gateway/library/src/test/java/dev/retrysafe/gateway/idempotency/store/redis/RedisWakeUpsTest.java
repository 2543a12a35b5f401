package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import io.lettuce.core.AclSetuserArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Wake-ups between two gateway instances on one real Redis 7 (the redis-server of the PATH; skipped on an older
 * one): over the shard channel of the record's slot, subscribed only while the instance has a waiter in that slot;
 * and over the classic channel when it is chosen instead. Redis 6 itself: {@code RedisIdempotencyStoreOnRedis6ContractTest}.
 */
class RedisWakeUpsTest {
    static final Duration WAIT = Duration.ofSeconds(5);
    static final Fingerprints FP = Fingerprints.underNoRules(new Fingerprint("a".repeat(64)));

    static RedisProcess redis;
    static LettuceConnectionFactory connections;
    static ReactiveRedisTemplate<String, byte[]> bytes;
    /** The store's own connection, shared by the instances as one client would. */
    static StoreConnection store;
    /** The test's own look at the server: which shard channels are subscribed, and publishing by hand. */
    static StatefulRedisConnection<String, String> admin;
    final List<AutoCloseable> started = new ArrayList<>();

    @BeforeAll
    static void startRedis() {
        redis = RedisProcess.start();
        connections = redis.connect();
        bytes = RedisProcess.bytesTemplate(connections);
        store = StoreConnection.open(connections);
        admin = ((RedisClient) connections.getRequiredNativeClient()).connect(StringCodec.UTF8);
        String version = admin.sync().info("server").lines().filter(line -> line.startsWith("redis_version:"))
                .findFirst().orElseThrow().substring("redis_version:".length());
        assumeTrue(Integer.parseInt(version.split("\\.")[0]) >= 7,
                "needs Redis 7 or later on the PATH for shard channels; found " + version);
    }

    @AfterAll
    static void stopRedis() {
        if (admin != null) {
            admin.close();
        }
        if (connections != null) {
            connections.destroy();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @AfterEach
    void stopInstances() throws Exception {
        for (AutoCloseable instance : started) {
            instance.close();
        }
    }

    @Test
    void onRedis7AWakeUpGoesToTheShardChannelOfTheRecordsSlot() {
        Instance instance = instance(RedisWakeUps.on(connections, new SettleSignals()));
        String hash = newScope().hash();

        assertThat(instance.wakeUps.channel().block(WAIT)).isEqualTo(WakeUpChannel.SHARDED);
        assertThat(WakeUpChannel.SHARDED.channelOf(hash))
                .isEqualTo("idempotency:settled:{" + RedisKeyspace.slotTag(hash) + "}");
        assertThat(SlotHash.getSlot(WakeUpChannel.SHARDED.channelOf(hash)))
                .isEqualTo(SlotHash.getSlot(RedisKeyspace.recordKey(hash)));
    }

    @Test
    void aWaiterOnOneInstanceIsWokenByAnotherInstancesReleaseOverTheShardChannel() {
        Instance first = instance(RedisWakeUps.on(connections, new SettleSignals()));
        Instance second = instance(RedisWakeUps.on(connections, new SettleSignals()));

        assertWokenAcross(first, second);
    }

    @Test
    void anInstanceListensToTheShardChannelOfASlotOnlyWhileItHasAWaiterThere() {
        Instance instance = instance(RedisWakeUps.on(connections, new SettleSignals()));
        String hash = newScope().hash();
        String channel = WakeUpChannel.SHARDED.channelOf(hash);
        assertThat(shardChannels()).doesNotContain(channel);

        try (SettleWaiter waiter = instance.wakeUps.register(hash)) {
            waiter.listening().block(WAIT);
            assertThat(shardChannels()).as("acknowledged before listening() completes").containsExactly(channel);
        }
        // Dropped once the linger after its last waiter has passed.
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop().concatMap(tick -> Mono.fromCallable(this::shardChannels))
                .filter(List::isEmpty).next().block(ShardSubscriptions.LINGER.plus(WAIT));
        assertThat(instance.wakeUps.subscribedSlots()).isZero();
    }

    /**
     * A Redis client that cannot connect at all (stopped, as Spring's test contexts do to paused contexts, or
     * refused at once): the waiter's lease still comes back and says it is done waiting for the subscription, so
     * the request goes on (its own in-flight wait is then its wake-up) instead of failing with a 500.
     */
    @Test
    void aSubscriptionThatFailsAtOnceStillGivesTheWaiterALease() {
        AtomicInteger attempts = new AtomicInteger();
        ShardSubscriptions shards = new ShardSubscriptions(() -> {
            attempts.incrementAndGet();
            return Mono.error(new IllegalStateException("LettuceConnectionFactory has been STOPPED"));
        }, Duration.ZERO, scopeHash -> { });
        started.add(shards);
        String hash = newScope().hash();

        try (ShardSubscriptions.Lease lease = shards.listen(hash)) {
            lease.subscribed().block(WAIT);
        }
        try (ShardSubscriptions.Lease again = shards.listen(hash)) {
            again.subscribed().block(WAIT);
        }
        assertThat(attempts).as("a failed connection is not kept: tried again").hasValue(2);
    }

    /**
     * A subscription attempt that fails while the slot has a waiter (on a Cluster: a resubscription refused with
     * MOVED both ways while the slot is between two masters) is tried again without a new registration, so the
     * waiter already listening is still woken.
     */
    @Test
    void aFailedSubscriptionIsTriedAgainWhileItsSlotStillHasAWaiter() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        BlockingQueue<String> received = new LinkedBlockingQueue<>();
        ShardSubscriptions shards = new ShardSubscriptions(() -> attempts.incrementAndGet() == 1
                ? Mono.error(new IllegalStateException("MOVED, as between two masters"))
                : connectPubSub(), Duration.ZERO, received::add);
        started.add(shards);
        String hash = newScope().hash();
        String channel = WakeUpChannel.SHARDED.channelOf(hash);

        try (ShardSubscriptions.Lease lease = shards.listen(hash)) {
            lease.subscribed().block(WAIT);
            Flux.interval(Duration.ofMillis(20)).onBackpressureDrop()
                    .concatMap(tick -> Mono.fromCallable(() -> shardNumSub(channel)))
                    .filter(count -> count == 1).next().block(WAIT);
            admin.sync().spublish(channel, hash);
            assertThat(received.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isEqualTo(hash);
        }
        assertThat(attempts).as("tried again by itself, once").hasValue(2);
    }

    @Test
    void waitersInOneSlotShareItsSubscriptionUntilTheLastOfThemIsGone() throws Exception {
        BlockingQueue<String> received = new LinkedBlockingQueue<>();
        ShardSubscriptions shards = new ShardSubscriptions(RedisWakeUpsTest::connectPubSub, Duration.ZERO,
                received::add);
        started.add(shards);
        String[] sameSlot = twoHashesInOneSlot();
        String channel = WakeUpChannel.SHARDED.channelOf(sameSlot[0]);
        ShardSubscriptions.Lease first = shards.listen(sameSlot[0]);
        ShardSubscriptions.Lease second = shards.listen(sameSlot[1]);
        second.subscribed().block(WAIT);
        assertThat(shardNumSub(channel)).as("one subscription for both").isEqualTo(1);

        first.close();
        // Another slot's lease, closed, shows when a dropped slot has been unsubscribed (no linger here).
        String otherHash = newScope().hash();
        String otherChannel = WakeUpChannel.SHARDED.channelOf(otherHash);
        ShardSubscriptions.Lease other = shards.listen(otherHash);
        other.subscribed().block(WAIT);
        other.close();
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop().concatMap(tick -> Mono.fromCallable(this::shardChannels))
                .filter(channels -> !channels.contains(otherChannel)).next().block(WAIT);
        assertThat(shardNumSub(channel)).as("still held by the second waiter").isEqualTo(1);
        admin.sync().spublish(channel, "for-the-second");
        assertThat(received.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isEqualTo("for-the-second");

        second.close();
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop().concatMap(tick -> Mono.fromCallable(() -> shardNumSub(channel)))
                .filter(count -> count == 0).next().block(WAIT);
    }

    @Test
    void onTheClassicChannelAWaiterIsStillWokenByAnotherInstanceAndNoShardChannelIsSubscribed() {
        Instance first = instance(RedisWakeUps.on(connections, new SettleSignals(), WakeUpChannel.CLASSIC));
        Instance second = instance(RedisWakeUps.on(connections, new SettleSignals(), WakeUpChannel.CLASSIC));

        assertWokenAcross(first, second);
        assertThat(shardChannels()).isEmpty();
    }

    /** A rolling upgrade: an instance on shard channels still hears one that publishes on the classic channel. */
    @Test
    void anInstanceOnShardChannelsIsWokenByAnInstanceOnTheClassicOne() {
        Instance classic = instance(RedisWakeUps.on(connections, new SettleSignals(), WakeUpChannel.CLASSIC));
        Instance sharded = instance(RedisWakeUps.on(connections, new SettleSignals(), WakeUpChannel.SHARDED));

        assertWokenAcross(classic, sharded);
    }

    /** An ACL without INFO leaves the version unknown: the classic channel, which works on every Redis. */
    @Test
    void aRedisThatRefusesInfoGetsTheClassicChannel() {
        String password = UUID.randomUUID().toString();
        admin.sync().aclSetuser("no-info", AclSetuserArgs.Builder.on().addPassword(password).allKeys().allChannels()
                .allCommands().removeCommand(CommandType.INFO));
        RedisStandaloneConfiguration noInfo = new RedisStandaloneConfiguration("127.0.0.1", redis.port());
        noInfo.setUsername("no-info");
        noInfo.setPassword(password);
        LettuceConnectionFactory refusing = new LettuceConnectionFactory(noInfo);
        refusing.afterPropertiesSet();
        refusing.start();
        started.add(refusing::destroy);

        assertThat(RedisWakeUps.on(refusing, new SettleSignals()).channel().block(WAIT))
                .isEqualTo(WakeUpChannel.CLASSIC);
    }

    /**
     * A Redis that cannot be asked yet (down, or a Cluster node down: INFO goes to every node) must not fail the
     * store's steps: the classic channel until it can.
     */
    @Test
    void aRedisThatCannotBeAskedItsVersionGetsTheClassicChannelForNow() throws Exception {
        LettuceConnectionFactory nowhere = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration("127.0.0.1", freePort()));
        nowhere.afterPropertiesSet();
        nowhere.start();
        started.add(nowhere::destroy);

        assertThat(RedisWakeUps.on(nowhere, new SettleSignals()).channel().block(WAIT))
                .isEqualTo(WakeUpChannel.CLASSIC);
    }

    /**
     * A Redis that accepts connections and never answers (a hung server, a half-open link): a store step must not
     * wait for the version check, which here would wait for Lettuce's own timeout. The classic channel meanwhile.
     */
    @Test
    void aStoreStepDoesNotWaitForAVersionCheckThatNeverAnswers() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            LettuceConnectionFactory hung = new LettuceConnectionFactory(
                    new RedisStandaloneConfiguration("127.0.0.1", silent.getLocalPort()));
            hung.afterPropertiesSet();
            hung.start();
            started.add(hung::destroy);
            RedisWakeUps wakeUps = RedisWakeUps.on(hung, new SettleSignals());

            // Off the test's thread: a call that opens the connection blocks the thread that subscribes.
            ScriptCall.WakeUp wakeUp = Mono.fromCallable(() -> wakeUps.wakeUp("scope-hash"))
                    .subscribeOn(Schedulers.boundedElastic()).block(WAIT);

            assertThat(wakeUp.channel()).isEqualTo(RedisKeyspace.CLASSIC_CHANNEL);
        }
    }

    /** {@code settling} reserves a record, {@code waiting} waits for it; {@code settling}'s release must wake it. */
    private static void assertWokenAcross(Instance settling, Instance waiting) {
        IdempotencyScope scope = newScope();
        OwnerToken owner = OwnerToken.random();
        settling.store.reserve(request(scope, owner, false)).block(WAIT);
        try (SettleWaiter waiter = waiting.store.awaitSettle(scope)) {
            waiter.listening().block(WAIT);
            // As the filter's second look: the record now says someone waits, so settling it publishes.
            waiting.store.reserve(request(scope, OwnerToken.random(), true)).block(WAIT);
            Mono<Void> woken = waiter.settled().cache();
            woken.subscribe();

            settling.store.release(scope, owner).block(WAIT);

            woken.block(WAIT);
        }
    }

    private Instance instance(RedisWakeUps wakeUps) {
        wakeUps.start();
        wakeUps.classicSubscribed().block(WAIT);
        wakeUps.channel().block(WAIT);
        started.add(wakeUps::stop);
        return new Instance(wakeUps, RedisStoreBuilder.plain(store, wakeUps));
    }

    private static Mono<StatefulRedisPubSubConnection<String, String>> connectPubSub() {
        return Mono.fromCallable(() -> ((RedisClient) connections.getRequiredNativeClient())
                .connectPubSub(StringCodec.UTF8));
    }

    private List<String> shardChannels() {
        return admin.sync().pubsubShardChannels();
    }

    private long shardNumSub(String channel) {
        return admin.sync().pubsubShardNumsub(channel).get(channel);
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private static String[] twoHashesInOneSlot() {
        String first = UUID.randomUUID().toString();
        int slot = SlotHash.getSlot(first);
        for (int n = 0; ; n++) {
            String candidate = first + "-" + n;
            if (SlotHash.getSlot(candidate) == slot) {
                return new String[] {first, candidate};
            }
        }
    }

    private static IdempotencyScope newScope() {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(UUID.randomUUID().toString()));
    }

    private static ReservationRequest request(IdempotencyScope scope, OwnerToken owner, boolean willWait) {
        return new ReservationRequest(scope, FP, owner, Duration.ofSeconds(30), Duration.ofMinutes(1),
                "http://upstream", willWait, false, "POST", "/merchants", Optional.empty());
    }

    private record Instance(RedisWakeUps wakeUps, RedisIdempotencyStore store) {
    }
}
