package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A {@link RedisIdempotencyStore} built through its one constructor, with what the tests mostly want (plain bodies
 * deflated from 1 KB, no replica acknowledgements, a first process poll after 1 s) unless a test says otherwise.
 */
public final class RedisStoreBuilder {
    private final Supplier<StoreConnection> redis;
    private final RedisWakeUps wakeUps;
    private EncryptionKeys encryption = EncryptionKeys.none();
    private Duration firstProcessPoll = Duration.ofSeconds(1);
    private Optional<NearCache> nearCache = Optional.empty();

    private RedisStoreBuilder(Supplier<StoreConnection> redis, RedisWakeUps wakeUps) {
        this.redis = redis;
        this.wakeUps = wakeUps;
    }

    public static RedisStoreBuilder on(StoreConnection redis, RedisWakeUps wakeUps) {
        return new RedisStoreBuilder(() -> redis, wakeUps);
    }

    public static RedisIdempotencyStore plain(StoreConnection redis, RedisWakeUps wakeUps) {
        return on(redis, wakeUps).build();
    }

    public RedisStoreBuilder sealedWith(EncryptionKeys keys) {
        this.encryption = keys;
        return this;
    }

    public RedisStoreBuilder firstProcessPoll(Duration delay) {
        this.firstProcessPoll = delay;
        return this;
    }

    public RedisStoreBuilder nearCache(NearCache cache) {
        this.nearCache = Optional.of(cache);
        return this;
    }

    public RedisIdempotencyStore build() {
        return new RedisIdempotencyStore(redis, wakeUps, 1024, encryption, Optional.empty(), firstProcessPoll,
                RedisIdempotencyStore.RELEASED_OWNERS_TTL, nearCache);
    }
}
