package dev.retrysafe.gateway.faults.torture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.support.LocalRedisCluster;
import org.junit.jupiter.api.Test;

/**
 * The wire torture with a store nemesis: the gateway reaches a real Redis (AOF, {@code appendfsync always}) through
 * the fault proxy with {@code store-timeout: 300ms}, and while randomized exchanges, wire faults and concurrent
 * duplicates run, the nemesis delays Redis's replies beyond store-timeout, stalls, resets and half-opens the
 * connections and restarts Redis (keeping or forgetting its records). Once the faults end, the invariants are
 * checked from Redis and the upstream's log. The seed is printed; {@code -Dtorture.seed=N} replays a run,
 * {@code -Dtorture.store-faults=delay,stall,reset,close,halfopen,restart,restart-forgetting} picks the store faults
 * (see {@link TortureSettings}; {@code load-tests/store-torture.sh} is the long run).
 */
class StoreTortureIntegrationTest {

    @Test
    void randomizedStoreFaultsNeverMakeTheRecordLieNorLeaveAClientWaiting() throws Exception {
        assumeTrue(LocalRedisCluster.onPath("redis-server"), "needs redis-server on the PATH");
        TortureSettings settings = TortureSettings.storeFromSystemProperties();
        System.out.println("Store torture seed " + settings.seed() + " (replay: " + settings.replayCommand() + ")");
        TortureReport report;
        try (TortureRun run = new TortureRun(settings)) {
            report = run.run();
        }
        String text = report.text();
        System.out.println(text);
        System.out.println("Report written to " + report.write().toAbsolutePath());
        assertThat(report.passed()).as("Store torture broke invariants; replay with %s%n%s",
                settings.replayCommand(), text).isTrue();
    }
}
