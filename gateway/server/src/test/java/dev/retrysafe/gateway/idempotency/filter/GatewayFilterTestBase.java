package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.support.LargeBodyUpstream;
import dev.retrysafe.gateway.support.AcceptingUpstream;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static dev.retrysafe.gateway.support.TestRoutes.route;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.support.TestRoutes;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * A real gateway on a random port, its own Redis (the embedded-redis auto-configuration, random port) and WireMock
 * as the upstream, over real HTTP. Subclasses share one application context.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "idempotency.tenant-header=X-Tenant-Id",
                "idempotency.request-body-timeout=2s",
                // Its periodic SCAN would show up among the commands RedisRoundTripsIntegrationTest counts.
                "idempotency.record-counts.enabled=false",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout=5s",
                "idempotency.process-poll.initial-delay=100ms",
                "idempotency.process-poll.max-delay=200ms",
                // Its reading of every slot of the queue would show up among the commands these tests count too.
                "idempotency.process-poll.restore-interval=1h",
                // RedisRoundTripsIntegrationTest counts Redis commands: no memory check may land in its window.
                "idempotency.store.check-interval=1h"})
abstract class GatewayFilterTestBase {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());
    static final int closedPort = TestRoutes.closedPort();
    static final LargeBodyUpstream largeBody = new LargeBodyUpstream(100L * 1024 * 1024);
    static final AcceptingUpstream accepting = new AcceptingUpstream();

    static {
        upstream.start();
        Runtime.getRuntime().addShutdownHook(new Thread(upstream::stop));
    }

    @LocalServerPort
    int port;

    @Autowired
    ReactiveRedisConnectionFactory redisConnectionFactory;

    WebTestClient client;
    ReactiveStringRedisTemplate redis;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        String upstreamUri = "http://127.0.0.1:" + upstream.port();
        route(registry, 0, "onboarding", upstreamUri, "/merchants/**",
                Map.of("unordered-arrays", "integrations,paymentMethods,sites"));
        route(registry, 1, "custom", upstreamUri, "/custom/**", Map.of(
                "methods", "POST",
                "key-header", "X-Request-Key",
                "key-min-length", "8",
                "key-max-length", "20",
                "replay-status", "201",
                "never-stored-headers", "Set-Cookie,X-Secret"));
        route(registry, 2, "limited", upstreamUri, "/limited/**", Map.of(
                "max-request-bytes", "1KB",
                "max-stored-response-bytes", "2KB"));
        route(registry, 3, "short-wait", upstreamUri, "/short-wait/**", Map.of("in-flight-wait", "300ms"));
        route(registry, 4, "short-retention", upstreamUri, "/short-retention/**", Map.of("retention", "300ms"));
        route(registry, 5, "unreachable", "http://127.0.0.1:" + closedPort, "/unreachable/**", Map.of());
        route(registry, 6, "other-route", upstreamUri, "/other/**", Map.of());
        route(registry, 7, "plain", upstreamUri, "/plain/**", null);
        route(registry, 8, "long-wait", upstreamUri, "/long-wait/**", Map.of("in-flight-wait", "20s"));
        route(registry, 9, "process", upstreamUri, "/proc/merchants/**", Map.of(
                "process-status-uri", "/proc/processes/{processId}"));
        route(registry, 10, "large", "http://127.0.0.1:" + largeBody.port(), "/large/**", Map.of());
        route(registry, 11, "accepting", "http://127.0.0.1:" + accepting.port(), "/accepting/**",
                Map.of("unordered-arrays", "integrations,paymentMethods,sites"));
        route(registry, 12, "process-status", upstreamUri, "/proc/processes/**", null);
        route(registry, 13, "stamped", upstreamUri, "/stamped/**", Map.of(
                "fingerprint-ignore", "/sentAt,/meta/*/requestId",
                "fingerprint-headers", "X-Api-Version"));
        route(registry, 14, "events", upstreamUri, "/events/**", Map.of("key-from", "body:/id"));
        route(registry, 15, "deliveries", upstreamUri, "/deliveries/**", Map.of("key-from", "header:X-GitHub-Delivery"));
        route(registry, 16, "ietf", upstreamUri, "/ietf/**", Map.of("contract", "ietf", "in-flight-wait", "300ms"));
        // Subclasses add routes of their own from index 17 on: a shared index silently replaces a route.
    }

    @BeforeEach
    void connect() {
        client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(20)).build();
        redis = new ReactiveStringRedisTemplate(redisConnectionFactory);
        upstream.resetAll();
    }

    static String newKey() {
        return UUID.randomUUID().toString();
    }

    static String url(String path) {
        return "http://127.0.0.1:" + upstream.port() + path;
    }
}
