package dev.retrysafe.gateway.idempotency.observability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The alerting rules shipped in {@code config/prometheus}: valid for Prometheus ({@code promtool check rules}) and
 * firing, or not, as their test cases say ({@code promtool test rules}). promtool comes with Debian's
 * {@code prometheus} package, which .ci/run installs; without it these tests are skipped, saying so.
 * {@link OperationsEndpointsIntegrationTest} checks that the metrics the rules use exist.
 */
class PrometheusRulesTest {
    static final Path RULES_DIRECTORY = Path.of("../../config/prometheus");
    static final String RULES = "idempotency-rules.yml";
    static final String RULE_TESTS = "idempotency-rules.test.yml";
    static Path promtool;

    @BeforeAll
    static void findPromtool() {
        Optional<Path> found = Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .map(directory -> Path.of(directory, "promtool"))
                .filter(Files::isExecutable)
                .findFirst();
        assumeTrue(found.isPresent(), "promtool is not on the PATH: the Prometheus rules are not checked (install "
                + "Debian's prometheus package, as .ci/run does)");
        promtool = found.get();
    }

    @Test
    void theRulesAreValidPrometheusRules() throws Exception {
        assertThat(run("check", "rules", RULES)).contains("SUCCESS");
    }

    @Test
    void everyAlertFiresAndStaysQuietAsItsTestCasesSay() throws Exception {
        assertThat(run("test", "rules", RULE_TESTS)).contains("SUCCESS");
    }

    @Test
    void everyAlertHasTestCases() throws IOException {
        List<String> alerts = Files.readAllLines(RULES_DIRECTORY.resolve(RULES)).stream()
                .filter(line -> line.trim().startsWith("- alert:"))
                .map(line -> line.substring(line.indexOf(':') + 1).trim())
                .toList();
        String tests = Files.readString(RULES_DIRECTORY.resolve(RULE_TESTS));
        assertThat(alerts).hasSize(7).allSatisfy(alert -> {
            assertThat(tests).as("a case where " + alert + " fires")
                    .containsPattern("alertname: " + alert + "\\n\\s+exp_alerts:\\n");
            assertThat(tests).as("a case where " + alert + " does not")
                    .contains("alertname: " + alert + "\n        exp_alerts: []");
        });
    }

    /** Runs promtool in the rules' directory (the test file names the rules relative to itself); its output. */
    private static String run(String... args) throws Exception {
        List<String> command = Stream.concat(Stream.of(promtool.toString()), Stream.of(args)).toList();
        Process process = new ProcessBuilder(command).directory(RULES_DIRECTORY.toFile()).redirectErrorStream(true)
                .start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(2, TimeUnit.MINUTES)).as("promtool ended").isTrue();
        assertThat(process.exitValue()).as(String.join(" ", command) + " said:\n" + output).isZero();
        return output;
    }
}
