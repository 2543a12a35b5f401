package dev.retrysafe.gateway.idempotency.store;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.support.LocalRedisCluster;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The store contract on a Redis Cluster of three masters (Redis 7: wake-ups on shard channels): the store's own
 * connection routes each script to its record's master, and a 202's process link and directory entry are written in
 * calls of their own. Skipped without {@code redis-server} and {@code redis-cli} on the PATH.
 */
class RedisClusterStoreContractIntegrationTest extends RedisStoreContractFixture {

    @BeforeAll
    static void startCluster() throws Exception {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Cluster can be started");
        LocalRedisCluster cluster = new LocalRedisCluster(3);
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisClusterConfiguration(List.of(cluster.nodes().split(","))), AS_THE_GATEWAY);
        factory.afterPropertiesSet();
        factory.start();
        startStore(factory, cluster);
    }
}
