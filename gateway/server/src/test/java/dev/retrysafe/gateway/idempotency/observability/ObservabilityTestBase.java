package dev.retrysafe.gateway.idempotency.observability;

import dev.retrysafe.gateway.support.RequestCounts;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static dev.retrysafe.gateway.support.TestRoutes.route;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.support.TestRoutes;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;

/**
 * A real gateway as it runs in production for operations: the management port apart (health, prometheus,
 * idempotency), Micrometer Tracing with Brave, the record counts sampled quickly, its own embedded Redis and WireMock
 * as the upstream, over real HTTP. The request log lines are captured from the {@code idempotency.request} logger.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "idempotency.tenant-header=X-Tenant-Id",
                "idempotency.record-counts.interval=200ms",
                // Shared two-core machines: a cold first call can take over the default second.
                "idempotency.store-timeout=5s",
                "idempotency.record-counts.pending-after=1s",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout=1s",
                // As the shipped configuration: the upstream joins the trace through UpstreamTraceContext.
                "spring.cloud.gateway.server.webflux.observability.enabled=false",
                "management.server.port=0",
                "management.endpoints.web.exposure.include=health,prometheus,idempotency",
                "management.endpoint.health.show-details=when-authorized",
                "management.endpoint.health.roles=OPERATOR",
                "idempotency.operator.username=ops",
                "idempotency.operator.password=s3cret"})
abstract class ObservabilityTestBase {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());
    static final int closedPort = TestRoutes.closedPort();

    static {
        upstream.start();
        Runtime.getRuntime().addShutdownHook(new Thread(upstream::stop));
    }

    @LocalServerPort
    int port;
    @LocalManagementPort
    int managementPort;
    @Autowired
    MeterRegistry meters;

    WebTestClient gateway;
    WebTestClient management;
    /** Read under its own lock: the appender adds to its list while holding it (AppenderBase.doAppend). */
    final ListAppender<ILoggingEvent> lines = new ListAppender<>();

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        String upstreamUri = "http://127.0.0.1:" + upstream.port();
        route(registry, 0, "orders", upstreamUri, "/orders/**",
                Map.of("max-request-bytes", "1KB", "max-stored-response-bytes", "2KB"));
        route(registry, 1, "no-wait", upstreamUri, "/no-wait/**", Map.of("in-flight-wait", "0s"));
        route(registry, 2, "long-wait", upstreamUri, "/long-wait/**", Map.of("in-flight-wait", "20s"));
        route(registry, 3, "unreachable", "http://127.0.0.1:" + closedPort, "/unreachable/**", Map.of());
        // Its reconciliation counter exists from the start, at 0, so the alerting rules on it have series.
        route(registry, 4, "reconciling", upstreamUri, "/reconciling/**",
                Map.of("reconcile-uri", "/reconciling/by-key/{key}"));
        registry.add("spring.cloud.gateway.server.webflux.routes[1].metadata.response-timeout", () -> 20000);
        registry.add("spring.cloud.gateway.server.webflux.routes[2].metadata.response-timeout", () -> 20000);
    }

    @BeforeEach
    void connect() {
        gateway = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(20)).build();
        management = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + managementPort)
                .responseTimeout(Duration.ofSeconds(20)).build();
        upstream.resetAll();
        lines.start();
        requestLogger().addAppender(lines);
    }

    @AfterEach
    void detachLog() {
        requestLogger().detachAppender(lines);
        lines.stop();
    }

    private static Logger requestLogger() {
        return (Logger) LoggerFactory.getLogger(RequestReport.LOGGER);
    }

    static String newKey() {
        return UUID.randomUUID().toString();
    }

    /** Sends a request without waiting for its answer (WebTestClient's exchange() blocks until the headers). */
    Disposable sendInBackground(String path, String key, String body) {
        return WebClient.create("http://127.0.0.1:" + port).post().uri(path).header("Idempotency-Key", key)
                .bodyValue(body).retrieve().toBodilessEntity().subscribe(response -> { }, error -> { });
    }

    /** A tenant of its own per test, so that its log lines can be told from the other tests'. */
    static String newTenant() {
        return "t-" + UUID.randomUUID();
    }

    static String tenantHash(String tenant) {
        return IdempotencyScope.tenantHash("header:" + tenant);
    }

    /** The request log lines of one tenant, parsed into their fields, waiting (bounded) until there are {@code n}. */
    List<Map<String, String>> linesOf(String tenant, int n) {
        String hash = tenantHash(tenant);
        Supplier<List<Map<String, String>>> found = () -> {
            synchronized (lines) {
                return List.copyOf(lines.list).stream().map(ILoggingEvent::getFormattedMessage)
                        .map(ObservabilityTestBase::fields).filter(f -> hash.equals(f.get("tenant"))).toList();
            }
        };
        awaitTrue(() -> found.get().size() >= n, "log lines for tenant " + tenant);
        assertThat(found.get()).hasSize(n);
        return found.get();
    }

    /** logfmt fields of one line; values here are never quoted (no spaces in route ids or hashes). */
    static Map<String, String> fields(String line) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String pair : line.split(" ")) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                fields.put(pair.substring(0, eq), pair.substring(eq + 1));
            }
        }
        return fields;
    }

    double requests(String route, String outcome) {
        return RequestCounts.count(meters, route, outcome);
    }

    double gauge(String name, String... tags) {
        var gauge = meters.find(name).tags(tags).gauge();
        return gauge == null ? Double.NaN : gauge.value();
    }

    /** Polls a condition until a deadline: no fixed sleeps. */
    static void awaitTrue(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("Timed out waiting for " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
