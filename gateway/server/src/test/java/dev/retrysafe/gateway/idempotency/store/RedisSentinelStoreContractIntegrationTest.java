package dev.retrysafe.gateway.idempotency.store;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.LocalRedisSentinel;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The store contract on a Sentinel-managed master with a replica: the store's own connection goes to the master
 * Sentinel names. Skipped without {@code redis-server} and {@code redis-cli} on the PATH.
 */
class RedisSentinelStoreContractIntegrationTest extends RedisStoreContractFixture {

    @BeforeAll
    static void startSentinel() throws Exception {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Sentinel setup can be started");
        LocalRedisSentinel sentinel = new LocalRedisSentinel();
        LettuceConnectionFactory factory = new LettuceConnectionFactory(new RedisSentinelConfiguration(
                LocalRedisSentinel.MASTER_NAME, Set.of(sentinel.sentinelNodes().split(","))), AS_THE_GATEWAY);
        factory.afterPropertiesSet();
        factory.start();
        startStore(factory, sentinel);
    }
}
