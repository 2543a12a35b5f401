package dev.retrysafe.gateway.idempotency.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.redis.WakeUpChannel;
import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The store contract on Redis 6.2 (the binary bundled with embedded-redis), which has no SPUBLISH: the scripts keep
 * the classic channel, and its waiters are woken through it.
 */
class RedisIdempotencyStoreOnRedis6ContractTest extends RedisStoreContractFixture {

    @BeforeAll
    static void startRedis6() {
        startStore(RedisProcess.startRedis6());
    }

    @Test
    void wakeUpsGoOverTheClassicChannel() {
        assertThat(wakeUps.channel().block(WAIT)).isEqualTo(WakeUpChannel.CLASSIC);
    }
}
