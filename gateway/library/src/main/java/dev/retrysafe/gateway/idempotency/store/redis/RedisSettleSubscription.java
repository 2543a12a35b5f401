package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.listener.ChannelTopic;
import org.springframework.data.redis.listener.ReactiveRedisMessageListenerContainer;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.util.retry.Retry;

/**
 * One subscription per gateway instance to the classic wake-up channel ({@link WakeUpChannel#CLASSIC}); each message
 * names a scope hash that was completed or released. A lost message costs latency, never correctness: waiters
 * re-check the record when their wait ends.
 */
final class RedisSettleSubscription implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(RedisSettleSubscription.class);

    private final ReactiveRedisConnectionFactory connectionFactory;
    private final SettleSignals signals;
    private final Sinks.Empty<Void> subscribed = Sinks.empty();
    private volatile Disposable subscription;

    RedisSettleSubscription(ReactiveRedisConnectionFactory connectionFactory, SettleSignals signals) {
        this.connectionFactory = connectionFactory;
        this.signals = signals;
    }

    @Override
    public void start() {
        // The container connects when created: build it inside the retried flux so that a Redis that is down at
        // startup delays the wake-ups instead of failing the gateway.
        subscription = Flux.defer(() -> {
                    ReactiveRedisMessageListenerContainer container = new ReactiveRedisMessageListenerContainer(connectionFactory);
                    return container.receiveLater(ChannelTopic.of(RedisKeyspace.CLASSIC_CHANNEL))
                            .doOnNext(messages -> subscribed.tryEmitEmpty())
                            .flatMapMany(messages -> messages)
                            .doFinally(signal -> container.destroyLater().subscribe(null, e -> { }));
                })
                .doOnNext(message -> signals.signal(message.getMessage()))
                .doOnError(e -> log.warn("Wake-up subscription unavailable ({}); retrying", e.toString()))
                .retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(5)))
                .subscribe();
    }

    /** Completes once the first subscription is live on the Redis server. */
    public Mono<Void> subscribed() {
        return subscribed.asMono();
    }

    @Override
    public void stop() {
        Disposable current = subscription;
        subscription = null;
        if (current != null) {
            current.dispose();
        }
    }

    @Override
    public boolean isRunning() {
        return subscription != null;
    }
}
