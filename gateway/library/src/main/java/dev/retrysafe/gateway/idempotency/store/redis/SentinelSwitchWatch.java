package dev.retrysafe.gateway.idempotency.store.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * Follows a Sentinel failover at once. Lettuce asks Sentinel for the master only when it connects, so after
 * {@code SENTINEL FAILOVER} every connection of the gateway (the store's, replica acknowledgements', wake-ups') would
 * stay on the old master, writable until Sentinel converts it to a replica seconds later, and each record written
 * there meanwhile would be lost. Here each Sentinel's {@code +switch-master} for the monitored master cuts the links
 * to the old one ({@link RedisLinks}); Lettuce reconnects to the master Sentinel now names and re-sends what had no
 * reply. Every Sentinel publishes the switch when it learns of it, so a reconnection that asked one that did not yet
 * know is corrected by that one's own message.
 *
 * <p>Subscribed in the background from startup, each Sentinel tried again every {@link #TRY_AGAIN_AFTER} until it
 * answers; once subscribed, Lettuce keeps the subscription across reconnections.
 */
public final class SentinelSwitchWatch implements SmartLifecycle {
    static final String SWITCH_CHANNEL = "+switch-master";
    static final Duration TRY_AGAIN_AFTER = Duration.ofSeconds(1);
    private static final Logger log = LoggerFactory.getLogger(SentinelSwitchWatch.class);

    private final LettuceConnectionFactory connections;
    private final RedisLinks links;
    private final List<Disposable> subscribing = new CopyOnWriteArrayList<>();
    private final List<StatefulRedisPubSubConnection<String, String>> subscribed = new CopyOnWriteArrayList<>();
    private volatile boolean running;

    public SentinelSwitchWatch(LettuceConnectionFactory connections, RedisLinks links) {
        this.connections = connections;
        this.links = links;
    }

    /**
     * A {@code +switch-master} message, {@code <master name> <old ip> <old port> <new ip> <new port>}: the old and the
     * new master as "host:port", if it is about {@code master}.
     */
    static Optional<List<String>> switchOf(String master, String message) {
        String[] parts = message.trim().split(" +");
        if (parts.length != 5 || !parts[0].equals(master)) {
            return Optional.empty();
        }
        return Optional.of(List.of(parts[1] + ":" + parts[2], parts[3] + ":" + parts[4]));
    }

    @Override
    public void start() {
        if (running) {
            return;
        }
        running = true;
        if (!connections.isRedisSentinelAware()) {
            return;
        }
        String master = connections.getSentinelConfiguration().getMaster().getName();
        RedisClient client = (RedisClient) connections.getRequiredNativeClient();
        RedisURI uri = ReplicaAcks.uriOf(connections);
        for (RedisURI sentinel : uri.getSentinels()) {
            sentinel.setSsl(uri.isSsl());
            sentinel.setVerifyPeer(uri.getVerifyMode());
            sentinel.setStartTls(uri.isStartTls());
            sentinel.setTimeout(uri.getTimeout());
            Optional.ofNullable(uri.getClientName()).ifPresent(sentinel::setClientName);
            subscribing.add(subscribe(client, sentinel, master));
        }
    }

    private Disposable subscribe(RedisClient client, RedisURI sentinel, String master) {
        boolean[] warned = {false};
        return Mono.fromCompletionStage(() -> client.connectPubSubAsync(StringCodec.UTF8, sentinel))
                .flatMap(pubSub -> {
                    pubSub.addListener(new RedisPubSubAdapter<>() {
                        @Override
                        public void message(String channel, String message) {
                            switchOf(master, message).ifPresent(change -> follow(master, change, sentinel));
                        }
                    });
                    return Mono.fromCompletionStage(pubSub.async().subscribe(SWITCH_CHANNEL))
                            .thenReturn(pubSub)
                            .doOnError(e -> pubSub.closeAsync());
                })
                .doOnError(e -> {
                    if (!warned[0]) {
                        warned[0] = true;
                        log.warn("Sentinel {} cannot be watched for failovers yet ({}); trying again every {} s",
                                sentinel.getHost() + ":" + sentinel.getPort(), e.toString(),
                                TRY_AGAIN_AFTER.toSeconds());
                    }
                })
                .retryWhen(Retry.fixedDelay(Long.MAX_VALUE, TRY_AGAIN_AFTER).filter(e -> running))
                .subscribe(pubSub -> {
                    if (running) {
                        subscribed.add(pubSub);
                    } else {
                        pubSub.closeAsync();
                    }
                }, e -> { });
    }

    private void follow(String master, List<String> change, RedisURI sentinel) {
        int cut = links.masterReplaced(change.get(0), change.get(1));
        log.info("Sentinel {} switched master {} from {} to {}: {} links to the old master cut, Lettuce reconnects to "
                + "the new one", sentinel.getHost() + ":" + sentinel.getPort(), master, change.get(0), change.get(1),
                cut);
    }

    /** After the factory (started early), before the web server takes requests (DEFAULT_PHASE - 2048). */
    @Override
    public int getPhase() {
        return DEFAULT_PHASE - 4096;
    }

    @Override
    public void stop() {
        running = false;
        List<Disposable> attempts = new ArrayList<>(subscribing);
        subscribing.clear();
        attempts.forEach(Disposable::dispose);
        List<StatefulRedisPubSubConnection<String, String>> open = new ArrayList<>(subscribed);
        subscribed.clear();
        open.forEach(StatefulRedisPubSubConnection::closeAsync);
    }

    @Override
    public boolean isRunning() {
        return running;
    }
}
