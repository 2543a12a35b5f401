package dev.retrysafe.gateway.faults.torture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.support.LocalRedisCluster;
import org.junit.jupiter.api.Test;

/**
 * The wire torture with a store nemesis: the gateway reaches a real Redis (AOF, {@code appendfsync always}) through
 * the fault proxy with {@code store-timeout: 300ms}, and while randomized exchanges, wire faults and concurrent
 * duplicates run, the nemesis delays Redis's replies beyond store-timeout, stalls, resets and half-opens the
 * connections and restarts Redis (keeping or forgetting its records). On a Sentinel-managed master with a replica,
 * and on a three-master Cluster with a replica each, it fails masters over instead (manual failovers and SIGKILLs,
 * at moments from the seed; 400 exchanges on 3 client threads each). Once the faults end, the invariants are
 * checked from Redis and the upstream's log. The seed is printed; {@code -Dtorture.seed=N} replays a run,
 * {@code -Dtorture.store-topology=standalone|sentinel|cluster} runs only that one, {@code -Dtorture.store-faults}
 * picks the store faults (see {@link TortureSettings}; {@code load-tests/store-torture.sh} is the long run).
 */
class StoreTortureIntegrationTest {

    @Test
    void randomizedStoreFaultsNeverMakeTheRecordLieNorLeaveAClientWaiting() throws Exception {
        torture(StoreTopology.STANDALONE);
    }

    @Test
    void sentinelFailoversNeverMakeTheRecordLieBeyondWhatAFailoverCanLose() throws Exception {
        torture(StoreTopology.SENTINEL);
    }

    @Test
    void clusterFailoversNeverMakeTheRecordLieBeyondWhatAFailoverCanLose() throws Exception {
        torture(StoreTopology.CLUSTER);
    }

    private static void torture(StoreTopology topology) throws Exception {
        assumeTrue(TortureSettings.topologyPicked(topology), "torture.store-topology picks another topology");
        assumeTrue(topology == StoreTopology.STANDALONE ? LocalRedisCluster.onPath("redis-server")
                : LocalRedisCluster.available(), "needs redis-server (and redis-cli for Sentinel and Cluster)");
        TortureSettings settings = TortureSettings.storeFromSystemProperties(topology);
        assumeTrue(settings.storeFaulted(), "torture.store-faults picks no fault that applies to " + topology.label);
        System.out.println("Store torture (" + topology.label + ") seed " + settings.seed() + " (replay: "
                + settings.replayCommand() + ")");
        TortureReport report;
        try (TortureRun run = new TortureRun(settings)) {
            report = run.run();
        }
        String text = report.text();
        System.out.println(text);
        System.out.println("Report written to " + report.write().toAbsolutePath());
        assertThat(report.passed()).as("Store torture (%s) broke invariants; replay with %s%n%s", topology.label,
                settings.replayCommand(), text).isTrue();
    }
}
