package dev.retrysafe.loadtests.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.convert.DurationStyle;
import org.yaml.snakeyaml.Yaml;

/**
 * deploy/kubernetes/ and the Dockerfile, without a container runtime: what can be read is checked as read (timing,
 * resources, selectors, ports, the non-root user, the jar), and the packaged server jar is started exactly as the
 * Deployment starts it ({@link PodProcess}) with a Redis and an upstream of this test's: every probe answers on the
 * port it names, the ConfigMap's routes are the ones it serves, readiness stays UP without Redis, and a SIGTERM
 * under load lets every exchange under way get its answer and settle its record before the process exits. Runs in
 * this module because it runs after the server is packaged.
 *
 * <p>Nothing here waits without a bound: every request has a timeout, every wait on the gateway's process a
 * deadline, and a failure says whether the process still runs and how its log ends. {@code @Timeout} is the last
 * resort, should a wait slip through.
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class KubernetesManifestsIntegrationTest {
    private static final Path JAR_DIR = KubernetesSet.ROOT.resolve("gateway/server/target");
    private static final String OPERATOR_PASSWORD = "kube-test-operator";
    private static final Duration STARTUP = Duration.ofSeconds(180);
    private static final Duration UPSTREAM_SLOWNESS = Duration.ofSeconds(8);
    /** An answer the gateway gives at once (a probe, a 422, a 201 from the fast upstream, a 503 without Redis). */
    private static final Duration ANSWER = Duration.ofSeconds(30);
    /** The held writes: the upstream's slowness, then the graceful shutdown's phase timeout at most (40 s). */
    private static final Duration HELD_ANSWER = Duration.ofSeconds(120);

    private final KubernetesSet set = KubernetesSet.read();
    // HTTP/1.1 as the kubelet's probes and a Service's clients speak it (no h2c upgrade attempt on the first call).
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private final AtomicInteger arrived = new AtomicInteger();
    private final CountDownLatch release = new CountDownLatch(1);
    private volatile boolean holding;
    private HttpServer upstream;
    private EmbeddedRedisServer redis;
    private PodProcess pod;

    @TempDir
    Path root;

    @BeforeEach
    void upstreamAndRedis() throws IOException {
        upstream = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 100);
        upstream.setExecutor(Executors.newCachedThreadPool());
        upstream.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            if (!exchange.getRequestMethod().equals("POST") || !exchange.getRequestURI().getPath().equals("/merchants")) {
                // Not a write (a reconciliation's lookup of an UNCERTAIN record, say): never received, and not one
                // of the writes this test counts and holds.
                exchange.sendResponseHeaders(404, -1);
                exchange.close();
                return;
            }
            arrived.incrementAndGet();
            try {
                if (holding && !release.await(120, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never released");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] body = ("{\"merchantId\":\"" + UUID.randomUUID() + "\"}").getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(201, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        upstream.start();
        redis = new EmbeddedRedisServer(0, Path.of("target", "kubernetes-redis").toAbsolutePath());
    }

    @AfterEach
    void stop() throws InterruptedException {
        release.countDown();
        if (pod != null) {
            pod.close();
        }
        upstream.stop(0);
        redis.stop();
    }

    @Test
    void theShutdownTimingFitsTheGracePeriodAndTheResponseTimeout() {
        Map<String, Object> config = new Yaml().load(set.configMapFile("application.yml"));
        Duration responseTimeout = duration(config, "spring.cloud.gateway.server.webflux.httpclient.response-timeout");
        Duration settleDeadline = duration(config, "idempotency.store-timeout").multipliedBy(3);
        Duration phase = duration(config, "spring.lifecycle.timeout-per-shutdown-phase");
        assertThat(value(config, "server.shutdown")).isEqualTo("graceful");
        @SuppressWarnings("unchecked")
        List<String> preStop = (List<String>) KubernetesSet.map(set.container(), "lifecycle", "preStop", "exec")
                .get("command");
        assertThat(preStop.get(0)).isEqualTo("sleep");
        Duration sleep = Duration.ofSeconds(Long.parseLong(preStop.get(1)));
        Duration grace = Duration.ofSeconds((Integer) set.podSpec().get("terminationGracePeriodSeconds"));

        assertThat(phase).as("graceful shutdown outlasts an exchange waiting for its upstream, then its settling")
                .isGreaterThan(responseTimeout.plus(settleDeadline));
        assertThat(grace).as("the kubelet's SIGKILL comes after the preStop sleep and the whole graceful shutdown")
                .isGreaterThan(sleep.plus(phase));
        assertThat(grace).isGreaterThan(responseTimeout.plus(settleDeadline).plus(sleep));
    }

    @Test
    void theSetHangsTogetherAndTheImageRunsTheBuiltJarAsANonRootUser() throws IOException {
        Map<String, Object> podLabels = KubernetesSet.map(set.deployment(), "spec", "template", "metadata", "labels");
        assertThat(podLabels).containsAllEntriesOf(
                KubernetesSet.map(set.deployment(), "spec", "selector", "matchLabels"));
        assertThat(podLabels).as("the Service selects the pods")
                .containsAllEntriesOf(KubernetesSet.map(set.service(), "spec", "selector"));
        assertThat(podLabels).as("the PodDisruptionBudget selects the pods")
                .containsAllEntriesOf(KubernetesSet.map(set.budget(), "spec", "selector", "matchLabels"));
        for (Map<String, Object> port : KubernetesSet.list(KubernetesSet.map(set.service(), "spec"), "ports")) {
            assertThat(set.containerPorts()).as("the Service targets a container port")
                    .containsValue(set.containerPort(port.get("targetPort")));
        }
        Map<String, Object> resources = KubernetesSet.map(set.container(), "resources");
        assertThat(KubernetesSet.map(resources, "requests")).containsKeys("cpu", "memory");
        assertThat(KubernetesSet.map(resources, "limits")).containsKey("memory");

        // The image: exec form (java is PID 1 and gets the SIGTERM), heap sized from the container's limit.
        List<String> entrypoint = set.entrypoint();
        assertThat(entrypoint).as("ENTRYPOINT in exec form").isNotNull();
        assertThat(entrypoint.get(0)).isEqualTo("java");
        assertThat(entrypoint).anyMatch(option -> option.startsWith("-XX:MaxRAMPercentage="));
        assertThat(set.instruction("FROM")).startsWith("eclipse-temurin:17-jre");
        String user = set.instruction("USER").split(":")[0];
        assertThat(user).isNotIn("root", "0");
        assertThat(KubernetesSet.map(set.podSpec(), "securityContext"))
                .containsEntry("runAsNonRoot", true).containsEntry("runAsUser", Integer.parseInt(user));
        assertThat(entrypoint.get(entrypoint.indexOf("-jar") + 1)).isEqualTo(PodProcess.copiedJar(set));
        String[] copy = set.instruction("COPY").split("\\s+");
        Path context = KubernetesSet.DOCKERFILE.getParent();
        try (Stream<Path> built = Files.list(JAR_DIR)) {
            assertThat(built.filter(context.getFileSystem().getPathMatcher("glob:" + context.resolve(copy[0]))::matches))
                    .as("COPY %s finds exactly the build's executable jar", copy[0]).hasSize(1);
        }
        List<Integer> exposed = set.instructions("EXPOSE").stream().flatMap(ports -> Stream.of(ports.split("\\s+")))
                .map(Integer::parseInt).toList();
        assertThat(exposed).containsExactlyInAnyOrderElementsOf(set.containerPorts().values());
    }

    @Test
    void theConfigMapIsTheShippedConfiguration() throws IOException {
        Object shipped = new Yaml().load(Files.readString(KubernetesSet.ROOT.resolve("config/application.yml")));
        assertThat((Object) new Yaml().load(set.configMapFile("application.yml"))).isEqualTo(shipped);
    }

    @Test
    void everyProbeAnswersOnThePortItNamesTheRoutesAreTheConfigMapsAndReadinessOutlivesRedis() throws Exception {
        pod = startPod("kubernetes-pod");
        for (String probe : List.of("startupProbe", "livenessProbe", "readinessProbe")) {
            Map<String, Object> httpGet = KubernetesSet.map(set.container(), probe, "httpGet");
            HttpResponse<String> answer = get(set.containerPort(httpGet.get("port")), (String) httpGet.get("path"));
            assertThat(answer.statusCode()).as(probe + " " + httpGet).isEqualTo(200);
            assertThat(answer.body()).contains("\"status\":\"UP\"");
        }
        // And again and again on one kept-alive connection, right after start, as a Service's clients reuse theirs:
        // Reactor Netty 1.3.6 could stop reading such a connection for good (KeepAliveReadStall in the library).
        for (int i = 0; i < 100; i++) {
            Map<String, Object> httpGet = KubernetesSet.map(set.container(), i % 2 == 0 ? "livenessProbe"
                    : "readinessProbe", "httpGet");
            assertThat(get(set.containerPort(httpGet.get("port")), (String) httpGet.get("path")).statusCode())
                    .isEqualTo(200);
        }
        // The ConfigMap's guarded route, towards ONBOARDING_URI, its records in SPRING_DATA_REDIS_URL's Redis.
        assertThat(post(null).statusCode()).as("no key on a guarded route").isEqualTo(422);
        assertThat(post(UUID.randomUUID().toString()).statusCode()).isEqualTo(201);
        assertThat(arrived).hasValue(1);
        assertThat(records()).containsOnly("COMPLETED").hasSize(1);
        // MANAGEMENT_PORT on localhost, the operator password from the Secret.
        int management = Integer.parseInt(envValue("MANAGEMENT_PORT"));
        HttpResponse<String> details = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                        + pod.port(management) + "/actuator/health")).timeout(ANSWER).header("Authorization", "Basic "
                        + Base64.getEncoder().encodeToString(("operator:" + OPERATOR_PASSWORD).getBytes()))
                .build());
        assertThat(details.body()).contains("idempotencyStore");

        // Readiness is not the store's: without Redis the pod stays in the Service and answers 503 itself.
        redis.stop();
        Map<String, Object> readiness = KubernetesSet.map(set.container(), "readinessProbe", "httpGet");
        HttpResponse<String> write = post(UUID.randomUUID().toString());
        assertThat(write.statusCode()).isEqualTo(503);
        assertThat(write.headers().firstValue("Retry-After")).isPresent();
        assertThat(get(set.containerPort(readiness.get("port")), (String) readiness.get("path")).statusCode())
                .isEqualTo(200);
    }

    @Test
    void aSigtermUnderLoadLetsEveryExchangeUnderWayAnswerAndSettleBeforeTheProcessExits() throws Exception {
        pod = startPod("kubernetes-sigterm");
        // A cold JVM on a busy machine may take longer than the store timeout (1 s) over its first Redis calls and
        // refuse writes with 503 and Retry-After, as it should: the load begins once one write went all the way.
        await(this::aGuardedWriteGoesThrough, "a guarded write answered 201");
        int warmUp = arrived.get();
        holding = true;
        int requests = 24;
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            answers.add(client.sendAsync(write(UUID.randomUUID().toString(), HELD_ANSWER),
                    HttpResponse.BodyHandlers.ofString()));
        }
        await(() -> arrived.get() - warmUp == requests, "every request reached the upstream");

        long signalled = System.nanoTime();
        pod.process().destroy(); // SIGTERM, as the kubelet sends after the preStop hook
        int port = set.containerPort(set.containerPorts().get("http"));
        await(() -> !pod.listening(port), "the gateway stopped taking connections");
        assertThat(pod.process().isAlive()).as(() -> "still answering what it holds: " + pod.describe()).isTrue();
        // The slow upstream answers well after shutdown began: later than the 3 s Reactor Netty leaves open
        // connections when shutdown is immediate, within the graceful phase timeout.
        CompletableFuture.runAsync(release::countDown, CompletableFuture.delayedExecutor(
                UPSTREAM_SLOWNESS.toMillis(), TimeUnit.MILLISECONDS));

        for (CompletableFuture<HttpResponse<String>> answer : answers) {
            HttpResponse<String> response = settled(answer); // a reset fails here
            assertThat(response.statusCode()).isEqualTo(201);
            assertThat(response.body()).contains("merchantId");
        }
        Map<String, Object> config = new Yaml().load(set.configMapFile("application.yml"));
        Duration phase = duration(config, "spring.lifecycle.timeout-per-shutdown-phase");
        assertThat(pod.awaitExit(phase.plusSeconds(60))).as(() -> "exited: " + pod.describe()).isTrue();
        assertThat(Duration.ofNanos(System.nanoTime() - signalled)).isLessThan(phase.plusSeconds(60));
        assertThat(pod.log()).as(() -> pod.describe())
                .contains("Graceful shutdown complete").doesNotContain("Graceful shutdown aborted");
        assertThat(records()).as("every record settled").hasSize(requests + 1).containsOnly("COMPLETED");
    }

    private PodProcess startPod(String name) throws Exception {
        Path jar;
        Assumptions.assumeTrue(Files.isDirectory(JAR_DIR), "the server is not packaged (run through the reactor build)");
        try (Stream<Path> built = Files.list(JAR_DIR)) {
            jar = built.filter(path -> path.getFileName().toString().endsWith("-exec.jar")).findFirst().orElseThrow();
        }
        PodProcess started = PodProcess.start(set, jar, root, Map.of(
                        "SPRING_DATA_REDIS_URL", "redis://127.0.0.1:" + redis.port(),
                        "ONBOARDING_URI", "http://127.0.0.1:" + upstream.getAddress().getPort()),
                Map.of("IDEMPOTENCY_OPERATOR_PASSWORD", OPERATOR_PASSWORD), name);
        pod = started;
        Map<String, Object> startup = KubernetesSet.map(set.container(), "startupProbe", "httpGet");
        int port = set.containerPort(startup.get("port"));
        await(() -> !started.process().isAlive() || answers(port, (String) startup.get("path")), "the startup probe");
        assertThat(started.process().isAlive()).as(() -> "started: " + started.describe()).isTrue();
        return started;
    }

    private boolean aGuardedWriteGoesThrough() {
        try {
            return post(UUID.randomUUID().toString()).statusCode() == 201;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private boolean answers(int port, String path) {
        try {
            return client.send(probe(port, path), HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
        } catch (IOException notYet) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private HttpResponse<String> get(int portInPod, String path) throws InterruptedException {
        return send(probe(portInPod, path));
    }

    private HttpRequest probe(int portInPod, String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + pod.port(portInPod) + path)).timeout(ANSWER)
                .build();
    }

    private HttpResponse<String> post(String key) throws InterruptedException {
        return send(write(key, ANSWER));
    }

    /** One request whose failure (timeout, reset) says what the gateway's process was doing. */
    private HttpResponse<String> send(HttpRequest request) throws InterruptedException {
        try {
            return client.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new AssertionError(request + " failed (" + e + "); on a new connection: " + again(request) + "; "
                    + pod.describe(), e);
        }
    }

    /** The same request again on a connection of its own, to tell a stuck connection from a stuck gateway. */
    private static String again(HttpRequest request) {
        try {
            HttpResponse<String> response = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()
                    .send(HttpRequest.newBuilder(request.uri()).timeout(Duration.ofSeconds(10)).GET().build(),
                            HttpResponse.BodyHandlers.ofString());
            return "GET answered " + response.statusCode() + " " + response.body();
        } catch (IOException | InterruptedException e) {
            return "GET failed too: " + e;
        }
    }

    private HttpResponse<String> settled(CompletableFuture<HttpResponse<String>> answer) throws InterruptedException {
        try {
            // The request's own timeout completes it; this bound only guards against a client that never does.
            return answer.get(HELD_ANSWER.plusSeconds(10).toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new AssertionError("a held write got no answer (" + e + "); " + pod.describe(), e);
        }
    }

    private HttpRequest write(String key, Duration timeout) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                        + pod.port(set.containerPorts().get("http")) + "/merchants"))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"legalName\":\"Kube GmbH\"}"));
        if (key != null) {
            request.header("Idempotency-Key", key);
        }
        return request.build();
    }

    private String envValue(String name) {
        return KubernetesSet.list(set.container(), "env").stream().filter(variable -> name.equals(variable.get("name")))
                .map(variable -> String.valueOf(variable.get("value"))).findFirst().orElseThrow();
    }

    /** Every record's state, by key (Redis must be running). */
    private List<String> records() {
        RedisURI uri = RedisURI.create("127.0.0.1", redis.port());
        uri.setTimeout(ANSWER);
        RedisClient redisClient = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> connection = redisClient.connect()) {
            Map<String, String> states = new TreeMap<>();
            ScanIterator.scan(connection.sync(), ScanArgs.Builder.matches("idempotency:{*").limit(500))
                    .forEachRemaining(key -> {
                        String state = connection.sync().hget(key, "state");
                        if (state != null) {
                            states.put(key, state);
                        }
                    });
            return List.copyOf(states.values());
        } finally {
            redisClient.shutdown();
        }
    }

    private void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + STARTUP.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + STARTUP + ": " + what + "; " + pod.describe());
            }
            TimeUnit.MILLISECONDS.sleep(50); // poll interval of a bounded wait on the condition
        }
    }

    private static Object value(Map<String, Object> config, String dotted) {
        Object value = config;
        for (String step : dotted.split("\\.")) {
            value = value instanceof Map<?, ?> map ? map.get(step) : null;
        }
        if (value == null) {
            throw new AssertionError("the ConfigMap's application.yml does not set " + dotted);
        }
        return value;
    }

    private static Duration duration(Map<String, Object> config, String dotted) {
        return DurationStyle.detectAndParse(String.valueOf(value(config, dotted)));
    }
}
