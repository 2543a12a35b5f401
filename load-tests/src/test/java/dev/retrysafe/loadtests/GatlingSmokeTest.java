package dev.retrysafe.loadtests;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.loadtests.gatling.MismatchSimulation;
import dev.retrysafe.loadtests.gatling.ReplayHeavySimulation;
import dev.retrysafe.loadtests.gatling.RetryStormSimulation;
import dev.retrysafe.loadtests.gatling.UniqueKeysSimulation;
import dev.retrysafe.onboarding.OnboardingBackendApplication;
import io.gatling.javaapi.core.Simulation;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
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
 * fails (a KO request, a failed assertion, a broken invariant) fails the test. Reports land in
 * {@code target/gatling/<simulation>-<timestamp>/index.html}; Gatling prints the path (in
 * {@code target/surefire-reports/dev.retrysafe.loadtests.GatlingSmokeTest-output.txt}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 3, unit = java.util.concurrent.TimeUnit.MINUTES)
class GatlingSmokeTest {

    private static final Path RESULTS = Path.of("target", "gatling").toAbsolutePath();
    private static final Pattern WRITE_REQUESTS = Pattern.compile("\"writeRequests\"\\s*:\\s*(\\d+)");
    private static final int STORM_KEYS = 3;

    private final Map<String, String> previousProperties = new HashMap<>();
    private final List<String> reports = new ArrayList<>();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private EmbeddedRedisServer redis;
    private ConfigurableApplicationContext backend;
    private ConfigurableApplicationContext gateway;
    private int backendPort;

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

        setProperty("baseUrl", "http://127.0.0.1:" + localPort(gateway));
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

        int exitCode = runGatling(simulation);
        reports.add(latestReport(simulation));

        assertEquals(0, exitCode, simulation.getSimpleName() + " failed (Gatling exit code " + exitCode
                + "; 2 = assertions failed): see its console summary in the test output and "
                + reports.get(reports.size() - 1));
        if (simulation == RetryStormSimulation.class) {
            // Seen from the backend: however many copies of each key were sent, each reached it once.
            assertEquals(STORM_KEYS, backendWriteRequests() - writesBefore,
                    "backend write requests during the retry storm (one per key)");
        }
    }

    /** Gatling's own launcher (what the Maven plugin forks), in this JVM; its return value is the exit code. */
    private static int runGatling(Class<? extends Simulation> simulation) {
        return io.gatling.app.Gatling$.MODULE$.fromArgs(new String[] {
                "-s", simulation.getName(),
                "-rf", RESULTS.toString(),
                "-rd", "smoke run of the build"});
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
