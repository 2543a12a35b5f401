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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * Issue 6, point 4: Redis over TLS through the standard settings, {@code spring.data.redis.ssl.*} with an SSL
 * bundle holding the server's certificate, against a TLS-only {@code redis-server} (a certificate made by
 * {@code openssl} for this run). A gateway that does not trust the certificate refuses to talk to that Redis:
 * 503, never a silent plaintext or unverified connection.
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisTlsIntegrationTest {
    static final String PASSWORD = "tls-" + UUID.randomUUID();

    static Path certificates;
    static LocalRedisServer redis;
    static WireMockServer upstream;

    @BeforeAll
    static void start() throws IOException, InterruptedException {
        assumeTrue(LocalRedisCluster.onPath("redis-server") && LocalRedisCluster.onPath("openssl"),
                "needs redis-server and openssl on the PATH");
        certificates = Files.createDirectories(Path.of("target/redis-tls-" + System.nanoTime())).toAbsolutePath();
        Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "ec",
                "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                "-keyout", cert("key.pem"), "-out", cert("cert.pem"))
                .redirectErrorStream(true).redirectOutput(certificates.resolve("openssl.log").toFile()).start();
        assertThat(openssl.waitFor(30, TimeUnit.SECONDS) && openssl.exitValue() == 0)
                .as("openssl made a certificate; see %s", certificates.resolve("openssl.log")).isTrue();
        try {
            redis = new LocalRedisServer("--tls-port", "--tls-cert-file", cert("cert.pem"),
                    "--tls-key-file", cert("key.pem"), "--tls-ca-cert-file", cert("cert.pem"),
                    "--tls-auth-clients", "no", "--requirepass", PASSWORD);
        } catch (IOException failed) {
            // Only a redis-server built without TLS (it rejects the tls-* directives) skips; any other failure to
            // start fails the test instead of hiding behind a skip.
            boolean builtWithoutTls = String.valueOf(failed.getMessage()).contains("redis-server exited")
                    && String.valueOf(failed.getMessage()).toLowerCase(Locale.ROOT).contains("tls");
            if (!builtWithoutTls) {
                throw failed;
            }
            assumeTrue(false, "redis-server cannot serve TLS here: " + failed.getMessage());
        }
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(upstream == null ? null : upstream::stop, redis);
    }

    static String cert(String file) {
        return certificates.resolve(file).toString();
    }

    static Map<String, String> tls(Map<String, String> more) {
        Map<String, String> settings = new HashMap<>(more);
        settings.put("spring.data.redis.host", "127.0.0.1");
        settings.put("spring.data.redis.port", Integer.toString(redis.port()));
        settings.put("spring.data.redis.password", PASSWORD);
        settings.put("spring.data.redis.ssl.enabled", "true");
        return settings;
    }

    @Test
    void guardedRequestsWorkOverTlsWithTheCertificateFromAnSslBundle() {
        try (RedisBackedGateway gateway = new RedisBackedGateway(upstream, tls(Map.of(
                "spring.data.redis.ssl.bundle", "redis",
                "spring.ssl.bundle.pem.redis.truststore.certificate", "file:" + cert("cert.pem"))))) {
            gateway.assertWritesAndReplays();
            gateway.assertWakeUpsArrive();
        }
    }

    @Test
    void aServerCertificateTheGatewayDoesNotTrustIsRefused(CapturedOutput output) {
        try (RedisBackedGateway gateway = new RedisBackedGateway(upstream, tls(Map.of()))) {
            gateway.assertRefused();
            assertThat(output.getOut().lines().filter(line -> line.contains("Idempotency store unavailable")))
                    .isNotEmpty().allSatisfy(line -> assertThat(line).containsIgnoringCase("certificat"));
        }
    }
}
