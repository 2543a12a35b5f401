package dev.retrysafe.gateway.faults.torture;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * Randomized wire-level faults under concurrency against the real gateway, a real Redis and an upstream that logs
 * what it received, then the gateway's promises checked over all of it. The seed is printed;
 * {@code -Dtorture.seed=N} replays a run (see {@link TortureSettings} for the other knobs and
 * {@code load-tests/torture.sh} for the long run).
 */
class WireTortureIntegrationTest {

    @Test
    void randomizedWireFaultsNeverMakeTheRecordLie() throws Exception {
        TortureSettings settings = TortureSettings.fromSystemProperties();
        System.out.println("Wire torture seed " + settings.seed() + " (replay: " + settings.replayCommand() + ")");
        TortureReport report;
        try (TortureRun run = new TortureRun(settings)) {
            report = run.run();
        }
        String text = report.text();
        System.out.println(text);
        System.out.println("Report written to " + report.write().toAbsolutePath());
        assertThat(report.passed()).as("Wire torture broke invariants; replay with %s%n%s",
                settings.replayCommand(), text).isTrue();
    }
}
