package dev.retrysafe.gateway.idempotency.store;

import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import org.junit.jupiter.api.BeforeAll;

/**
 * The store contract on the redis-server of the PATH (Redis 7 where the tests run: wake-ups over shard channels;
 * {@link RedisIdempotencyStoreOnRedis6ContractTest} takes the classic channel).
 */
class RedisIdempotencyStoreContractTest extends RedisStoreContractFixture {

    @BeforeAll
    static void startRedis() {
        startStore(RedisProcess.start());
    }
}
