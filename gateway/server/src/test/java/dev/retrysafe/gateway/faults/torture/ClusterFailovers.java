package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.support.LocalRedisCluster;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.LongConsumer;

/** A Redis Cluster of three masters with a replica each ({@link LocalRedisCluster}); a random master fails over. */
final class ClusterFailovers implements Failovers {
    private final LocalRedisCluster cluster;

    ClusterFailovers() throws Exception {
        cluster = new LocalRedisCluster(3, 1);
    }

    @Override
    public Map<String, String> gatewayProperties() {
        return Map.of("spring.data.redis.cluster.nodes", cluster.nodes(),
                "spring.data.redis.lettuce.cluster.refresh.adaptive", "true",
                "spring.data.redis.lettuce.cluster.refresh.period", "1s",
                "spring.data.redis.timeout", "1s");
    }

    /**
     * {@code CLUSTER FAILOVER} on a replica: the master stops its clients, the replica catches up, then takes over;
     * nothing the master acknowledged is lost.
     */
    @Override
    public void failOver(Random random, Runnable lossEnds) throws Exception {
        int master = pickMaster(random);
        int replica = cluster.replicaOf(master);
        String reply = LocalRedisCluster.cli(replica, "cluster", "failover");
        if (!reply.equals("OK")) {
            throw new IllegalStateException("CLUSTER FAILOVER on " + replica + " answered " + reply);
        }
        LocalRedisCluster.awaitReplication(replica, "role:master");
        // The old master becomes the new one's replica; under load a node may fail over again meanwhile, so the
        // wait is for the cluster's shape, not for this node's role.
        cluster.awaitReplicasLinked();
        cluster.awaitHealthy();
    }

    /**
     * The killed master restarts with its {@code nodes.conf} believing it still owns its slots, until the cluster
     * tells it otherwise: a second loss window, until it reports itself a replica.
     */
    @Override
    public void killMaster(Random random, Runnable killed, LongConsumer rejoined) throws Exception {
        int master = pickMaster(random);
        int replica = cluster.replicaOf(master);
        cluster.kill(master);
        killed.run();
        LocalRedisCluster.awaitReplication(replica, "role:master");
        cluster.awaitHealthy();
        long restarted = System.nanoTime();
        cluster.restart(master);
        cluster.awaitReplicasLinked();
        rejoined.accept(restarted);
    }

    @Override
    public void awaitReplicated() throws Exception {
        cluster.awaitReplicasLinked();
        cluster.awaitHealthy();
    }

    private int pickMaster(Random random) throws Exception {
        List<Integer> masters = cluster.masters();
        return masters.get(random.nextInt(masters.size()));
    }

    @Override
    public void close() {
        cluster.close();
    }
}
