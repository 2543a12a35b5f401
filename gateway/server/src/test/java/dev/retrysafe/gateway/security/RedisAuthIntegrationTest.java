package dev.retrysafe.gateway.security;

import dev.retrysafe.gateway.support.RedisBackedGateway;
import dev.retrysafe.gateway.support.LocalRedisServer;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import java.io.IOException;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * Issue 6, point 4: Redis AUTH through nothing but the standard {@code spring.data.redis.*} settings, against a
 * {@code redis-server --requirepass} from the PATH that also has a least-privilege ACL user (only the gateway's
 * keys and channel, no dangerous commands but INFO for the health check). A wrong password is answered at once
 * with 503 in the error envelope, health is DOWN, and the log says why.
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisAuthIntegrationTest {
    static final String DEFAULT_USER_PASSWORD = "default-" + UUID.randomUUID();
    static final String GATEWAY_USER_PASSWORD = "gateway-" + UUID.randomUUID();

    static LocalRedisServer redis;
    static WireMockServer upstream;

    @BeforeAll
    static void start() throws IOException {
        assumeTrue(LocalRedisCluster.onPath("redis-server"), "needs redis-server on the PATH (.ci/run installs it)");
        redis = new LocalRedisServer("--port", "--requirepass", DEFAULT_USER_PASSWORD,
                "--user", "gateway", "on", ">" + GATEWAY_USER_PASSWORD, "~idempotency*", "&idempotency:*",
                "+@all", "-@dangerous", "+info");
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(upstream == null ? null : upstream::stop, redis);
    }

    @Test
    void thePasswordOfRequirepassThroughSpringDataRedisPassword() {
        try (RedisBackedGateway gateway = new RedisBackedGateway(upstream, Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", Integer.toString(redis.port()),
                "spring.data.redis.password", DEFAULT_USER_PASSWORD))) {
            gateway.assertWritesAndReplays();
            gateway.assertWakeUpsArrive();
        }
    }

    @Test
    void anAclUserWithOnlyTheGatewaysKeysThroughTheRedisUrl() {
        try (RedisBackedGateway gateway = new RedisBackedGateway(upstream, Map.of(
                "spring.data.redis.url", "redis://gateway:" + GATEWAY_USER_PASSWORD + "@127.0.0.1:" + redis.port()))) {
            gateway.assertWritesAndReplays();
            gateway.assertWakeUpsArrive();
            gateway.client().get().uri("/actuator/health").exchange().expectStatus().isOk();
        }
    }

    @Test
    void aWrongPasswordIsA503InTheEnvelopeAtOnceAndHealthIsDown(CapturedOutput output) {
        try (RedisBackedGateway gateway = new RedisBackedGateway(upstream, Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", Integer.toString(redis.port()),
                "spring.data.redis.username", "gateway",
                "spring.data.redis.password", "not-the-password"))) {
            gateway.assertRefused();
            // Lettuce sometimes reports a failed handshake with its own internal error ("RedisHandshakeHandler not
            // registered") instead of the server's answer; every attempt is refused, and the log soon says why.
            for (int attempt = 0; attempt < 5 && !saysWrongPass(output); attempt++) {
                gateway.assertRefused();
            }
            assertThat(output.getOut().lines().filter(line -> line.contains("Idempotency store unavailable")))
                    .as("the log says why").isNotEmpty().anyMatch(line -> line.contains("WRONGPASS"));
            gateway.client().get().uri("/actuator/health").exchange()
                    .expectStatus().isEqualTo(503)
                    .expectBody().jsonPath("$.status").isEqualTo("DOWN");
        }
    }

    private static boolean saysWrongPass(CapturedOutput output) {
        return output.getOut().lines()
                .anyMatch(line -> line.contains("Idempotency store unavailable") && line.contains("WRONGPASS"));
    }
}
