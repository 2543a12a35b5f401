package dev.retrysafe.loadtests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.loadtests.gatling.MismatchSimulation;
import dev.retrysafe.loadtests.gatling.ReplayHeavySimulation;
import dev.retrysafe.loadtests.gatling.RetryStormSimulation;
import dev.retrysafe.loadtests.gatling.UniqueKeysSimulation;
import dev.retrysafe.onboarding.OnboardingBackendApplication;
import io.gatling.javaapi.core.Simulation;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The build's smoke run of the Gatling scenarios: a real local stack in this JVM on free ports (embedded Redis, the
 * sample Onboarding backend, the gateway with the Idempotency filter on {@code /merchants}), then each simulation in
 * smoke mode ({@code -Dsmoke=true}: a few seconds, a few users) through Gatling's own launcher. A Gatling run that
 * fails (a failed assertion: a broken invariant, an answer outside the contract) fails the test, and each run's
 * printed idempotency verdict must name the scenario's invariants, each "held". One more run points the retry storm
 * at the bare backend (no idempotency at all): its verdict must say BROKEN and the run must fail. Reports land in
 * {@code target/gatling/<simulation>-<timestamp>/index.html}; Gatling prints the path (in
 * {@code target/surefire-reports/dev.retrysafe.loadtests.GatlingSmokeTest-output.txt}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 3, unit = java.util.concurrent.TimeUnit.MINUTES)
class GatlingSmokeTest {

    private static final Path RESULTS = Path.of("target", "gatling").toAbsolutePath();
    private static final Pattern WRITE_REQUESTS = Pattern.compile("\"writeRequests\"\\s*:\\s*(\\d+)");
    private static final int STORM_KEYS = 3;
    /** A verdict row of an invariant, as IdempotencyVerdict prints it: "> invariant: LABEL   STATUS   details". */
    private static final Pattern INVARIANT_ROW =
            Pattern.compile("^> invariant: (.+?)\\s+(held|BROKEN|NOT SHOWN)(?:\\s|$)", Pattern.MULTILINE);
    private static final Map<Class<? extends Simulation>, List<String>> INVARIANTS = Map.of(
            UniqueKeysSimulation.class, List.of("one 202 per key"),
            RetryStormSimulation.class, List.of("one 202 per key"),
            ReplayHeavySimulation.class, List.of("one 202 per key", "byte-identical replays"),
            MismatchSimulation.class, List.of("one 202 per key", "byte-identical replays", "every mismatch a 409"));

    private final Map<String, String> previousProperties = new HashMap<>();
    private final List<String> reports = new ArrayList<>();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private EmbeddedRedisServer redis;
    private ConfigurableApplicationContext backend;
    private ConfigurableApplicationContext gateway;
    private int backendPort;
    private String gatewayUrl;

    @BeforeAll
    void startStack() {
        redis = new EmbeddedRedisServer(0, Path.of("target", "embedded-redis"));
        backend = OnboardingBackendApplication.start("--server.port=0", "--onboarding.processing-delay=200ms");
        backendPort = localPort(backend);
        gateway = new SpringApplicationBuilder(IdempotencyGatewayApplication.class)
                .properties(
                        "server.port=0",
                        "spring.main.banner-mode=off",
                        "spring.data.redis.host=127.0.0.1",
                        "spring.data.redis.port=" + redis.port(),
                        "idempotency.tenant-header=X-Tenant-Id",
                        "spring.cloud.gateway.server.webflux.routes[0].id=onboarding-merchants",
                        "spring.cloud.gateway.server.webflux.routes[0].uri=http://127.0.0.1:" + backendPort,
                        "spring.cloud.gateway.server.webflux.routes[0].predicates[0]=Path=/merchants,/merchants/**",
                        "spring.cloud.gateway.server.webflux.routes[0].filters[0].name=Idempotency",
                        "spring.cloud.gateway.server.webflux.routes[0].filters[0].args.unordered-arrays="
                                + "integrations,paymentMethods,sites")
                .run();

        gatewayUrl = "http://127.0.0.1:" + localPort(gateway);
        setProperty("baseUrl", gatewayUrl);
        setProperty("smoke", "true");
        setProperty("tenant", "gatling-smoke-" + UUID.randomUUID());
        setProperty("keys", Integer.toString(STORM_KEYS));
        // The gateway has unordered-arrays configured: let the replays exercise it.
        setProperty("shuffleUnorderedArrays", "true");
    }

    @AfterAll
    void stopStack() {
        previousProperties.forEach((name, value) -> {
            if (value == null) {
                System.clearProperty(name);
            } else {
                System.setProperty(name, value);
            }
        });
        // Clients first, Redis last.
        if (gateway != null) {
            gateway.close();
        }
        if (backend != null) {
            backend.close();
        }
        if (redis != null) {
            redis.stop();
        }
        System.out.println("Gatling smoke reports:");
        reports.forEach(report -> System.out.println("  " + report));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(classes = {UniqueKeysSimulation.class, RetryStormSimulation.class, ReplayHeavySimulation.class,
            MismatchSimulation.class})
    void simulationPassesInSmokeMode(Class<? extends Simulation> simulation) {
        long writesBefore = backendWriteRequests();

        GatlingRun run = runGatling(simulation);
        reports.add(latestReport(simulation));

        assertEquals(0, run.exitCode(), simulation.getSimpleName() + " failed (Gatling exit code " + run.exitCode()
                + "; 2 = assertions failed): see its verdict and console summary in the test output and "
                + reports.get(reports.size() - 1));
        Map<String, String> expected = new TreeMap<>();
        INVARIANTS.get(simulation).forEach(invariant -> expected.put(invariant, "held"));
        assertEquals(expected, invariantRows(run.output()), simulation.getSimpleName() + "'s printed verdict");
        assertTrue(run.output().contains("> IDEMPOTENCY: HELD"), "verdict line IDEMPOTENCY: HELD");
        if (simulation == RetryStormSimulation.class) {
            // Seen from the backend: however many copies of each key were sent, each reached it once.
            assertEquals(STORM_KEYS, backendWriteRequests() - writesBefore,
                    "backend write requests during the retry storm (one per key)");
        }
    }

    /**
     * The bare backend answers every copy of a key with a new 202, as a gateway that lost its idempotency would: the
     * retry storm's verdict must say so and the run must fail on it, with its report still written.
     */
    @Test
    void aTargetThatExecutesEveryCopyFailsTheRetryStormOnItsInvariant() {
        setProperty("baseUrl", "http://127.0.0.1:" + backendPort);
        GatlingRun run;
        try {
            run = runGatling(RetryStormSimulation.class);
        } finally {
            setProperty("baseUrl", gatewayUrl);
        }
        String report = latestReport(RetryStormSimulation.class);
        reports.add(report + " (against the bare backend: meant to fail)");

        assertEquals(2, run.exitCode(), "Gatling exit code (2 = assertions failed)");
        assertEquals(Map.of("one 202 per key", "BROKEN"), invariantRows(run.output()), "the printed verdict");
        assertTrue(run.output().contains("> IDEMPOTENCY: BROKEN"), "verdict line IDEMPOTENCY: BROKEN");
        assertTrue(Files.exists(Path.of(URI.create(report))), "the HTML report is written all the same: " + report);
    }

    private static Map<String, String> invariantRows(String output) {
        Map<String, String> rows = new TreeMap<>();
        Matcher row = INVARIANT_ROW.matcher(output);
        while (row.find()) {
            rows.put(row.group(1), row.group(2));
        }
        return rows;
    }

    private record GatlingRun(int exitCode, String output) {
    }

    /**
     * Gatling's own launcher (what the Maven plugin forks), in this JVM; its return value is the exit code. What the
     * run prints with System.out (the simulations' verdicts among it) still reaches the console, and is kept.
     */
    private static GatlingRun runGatling(Class<? extends Simulation> simulation) {
        PrintStream console = System.out;
        ByteArrayOutputStream copy = new ByteArrayOutputStream();
        System.setOut(new PrintStream(new Tee(console, copy), true, StandardCharsets.UTF_8));
        try {
            int exitCode = io.gatling.app.Gatling$.MODULE$.fromArgs(new String[] {
                    "-s", simulation.getName(),
                    "-rf", RESULTS.toString(),
                    "-rd", "smoke run of the build"});
            System.out.flush();
            return new GatlingRun(exitCode, copy.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(console);
        }
    }

    /** Writes to the console and to a copy. */
    private static final class Tee extends OutputStream {
        private final OutputStream console;
        private final OutputStream copy;

        Tee(OutputStream console, OutputStream copy) {
            this.console = console;
            this.copy = copy;
        }

        @Override
        public void write(int b) throws IOException {
            console.write(b);
            copy.write(b);
        }

        @Override
        public void write(byte[] bytes, int offset, int length) throws IOException {
            console.write(bytes, offset, length);
            copy.write(bytes, offset, length);
        }

        @Override
        public void flush() throws IOException {
            console.flush();
        }
    }

    private static String latestReport(Class<? extends Simulation> simulation) {
        String prefix = simulation.getSimpleName().toLowerCase(Locale.ROOT) + "-";
        try (Stream<Path> runs = Files.list(RESULTS)) {
            return runs.filter(run -> run.getFileName().toString().startsWith(prefix))
                    .max(Comparator.comparing(run -> run.getFileName().toString()))
                    .map(run -> run.resolve("index.html").toUri().toString())
                    .orElse("(no report for " + simulation.getSimpleName() + " in " + RESULTS + ")");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private long backendWriteRequests() {
        try {
            HttpResponse<String> stats = client.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + backendPort + "/stats"))
                            .timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            Matcher matcher = WRITE_REQUESTS.matcher(stats.body());
            if (stats.statusCode() != 200 || !matcher.find()) {
                throw new IllegalStateException(
                        "Unexpected backend /stats answer " + stats.statusCode() + ": " + stats.body());
            }
            return Long.parseLong(matcher.group(1));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private void setProperty(String name, String value) {
        previousProperties.putIfAbsent(name, System.getProperty(name));
        System.setProperty(name, value);
    }

    private static int localPort(ConfigurableApplicationContext context) {
        return context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    }
}
