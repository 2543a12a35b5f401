package dev.retrysafe.gateway.security;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import dev.retrysafe.gateway.support.Gateways;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.ReactiveHashCommands;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;

/**
 * Encrypted stored responses through real gateways on one real Redis: one gateway knows only key {@code k1}, the
 * other has rotated to {@code k2} and still knows {@code k1}. A record written under a key the reading gateway
 * does not have stands for a key removed after a rotation.
 */
class EncryptedStorageIntegrationTest {
    static final String K1 = key(1);
    static final String K2 = key(2);

    static EmbeddedRedisServer redis;
    static WireMockServer upstream;
    static ConfigurableApplicationContext onlyK1;
    static ConfigurableApplicationContext rotatedToK2;

    @BeforeAll
    static void start() {
        redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        onlyK1 = gateway(Map.of("idempotency.encryption.keys.k1", K1, "idempotency.encryption.active-key", "k1",
                "management.endpoints.web.exposure.include", "health,idempotency",
                "idempotency.operator.password", "ops-secret"));
        rotatedToK2 = gateway(Map.of("idempotency.encryption.keys.k1", K1, "idempotency.encryption.keys.k2", K2,
                "idempotency.encryption.active-key", "k2"));
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(rotatedToK2, onlyK1, upstream == null ? null : upstream::stop, redis == null ? null : redis::stop);
    }

    static ConfigurableApplicationContext gateway(Map<String, String> encryption) {
        Map<String, String> properties = new HashMap<>(encryption);
        properties.put("spring.data.redis.host", "127.0.0.1");
        properties.put("spring.data.redis.port", Integer.toString(redis.port()));
        properties.put("idempotency.tenant-header", "X-Tenant-Id");
        return Gateways.start("http://127.0.0.1:" + upstream.port(), properties);
    }

    static String key(int seed) {
        byte[] key = new byte[32];
        java.util.Arrays.fill(key, (byte) (seed * 17));
        return Base64.getEncoder().encodeToString(key);
    }

    @Test
    void recordsWrittenUnderTheOldKeyStillReplayAfterTheActiveKeyChanged() {
        String key = UUID.randomUUID().toString();
        String path = stubUniqueAnswer(key);

        String first = firstWrite(onlyK1, path, key, "acme");
        assertThat(new String(rawResponse(scope("acme", key)), StandardCharsets.ISO_8859_1)).contains("k1");

        send(rotatedToK2, path, key, "acme").expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo(first);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo(path)));
    }

    @Test
    void redisHoldsNoPlaintextOfTheStoredResponse() {
        String key = UUID.randomUUID().toString();
        String path = "/merchants/" + key;
        String secret = "DE89370400440532013000-" + UUID.randomUUID();
        upstream.stubFor(post(urlEqualTo(path)).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withHeader("X-Account-Reference", secret)
                .withBody("{\"iban\":\"" + secret + "\"}")));

        firstWrite(rotatedToK2, path, key, "acme");

        byte[] raw = rawResponse(scope("acme", key));
        String asText = new String(raw, StandardCharsets.ISO_8859_1);
        assertThat(raw[0]).as("sealed format").isEqualTo((byte) 2);
        assertThat(asText).contains("k2").doesNotContain(secret).doesNotContain("iban").doesNotContain("DE8937")
                .doesNotContain("application/json").doesNotContain("X-Account-Reference");
        send(rotatedToK2, path, key, "acme").expectStatus().isOk()
                .expectHeader().valueEquals("X-Account-Reference", secret)
                .expectBody(String.class).isEqualTo("{\"iban\":\"" + secret + "\"}");
    }

    @Test
    void aRecordWhoseKeyIsNoLongerConfiguredIsA409AndIsNeverSentAgain() {
        String key = UUID.randomUUID().toString();
        String path = stubUniqueAnswer(key);
        firstWrite(rotatedToK2, path, key, "acme");

        for (int attempt = 0; attempt < 2; attempt++) {
            send(onlyK1, path, key, "acme")
                    .expectStatus().isEqualTo(409)
                    .expectHeader().contentType(MediaType.APPLICATION_JSON)
                    .expectHeader().doesNotExist("Idempotency-Replayed")
                    .expectBody()
                    .jsonPath("$.status.status").isEqualTo("FAILED")
                    .jsonPath("$.status.reason").isEqualTo(409)
                    .jsonPath("$.status.message").value(message -> assertThat((String) message)
                            .contains("already processed (status 202)").contains("can no longer be read"));
        }
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo(path)));

        // The operator API shows why instead of failing on it.
        client(onlyK1).get().uri("/actuator/idempotency/{hash}?includeBody=true", scopeHash("acme", key))
                .headers(h -> h.setBasicAuth("operator", "ops-secret")).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.state").isEqualTo("COMPLETED")
                .jsonPath("$.response.status").isEqualTo(202)
                .jsonPath("$.response.body").doesNotExist()
                .jsonPath("$.response.unreadable").value(reason -> assertThat((String) reason).contains("'k2'"));
    }

    @Test
    void aStoredResponseCopiedIntoAnotherTenantsRecordIsNeverReplayedThere() {
        String key = UUID.randomUUID().toString();
        String path = stubUniqueAnswer(key);
        String acmeBody = firstWrite(rotatedToK2, path, key, "acme");
        firstWrite(rotatedToK2, path, key, "globex");

        // Someone with write access to Redis moves acme's sealed response into globex's record.
        hset(scope("globex", key), "response", rawResponse(scope("acme", key)));

        String answer = send(rotatedToK2, path, key, "globex").expectStatus().isEqualTo(409)
                .expectBody(String.class).returnResult().getResponseBody();
        assertThat(answer).doesNotContain(acmeBody).contains("can no longer be read");
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo(path)));
    }

    /** A path of its own for {@code key}, whose every answer is a 202 with a new process id. */
    private static String stubUniqueAnswer(String key) {
        String path = "/merchants/" + key;
        upstream.stubFor(post(urlEqualTo(path)).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json")
                .withTransformers("response-template")
                .withBody("{\"processId\":\"{{randomValue type='UUID'}}\"}")));
        return path;
    }

    /** Sends a first write, expects it forwarded, waits until it is stored, and returns its body. */
    private static String firstWrite(ConfigurableApplicationContext gateway, String path, String key, String tenant) {
        String body = send(gateway, path, key, tenant).expectStatus().isEqualTo(202)
                .expectHeader().doesNotExist("Idempotency-Replayed")
                .expectBody(String.class).returnResult().getResponseBody();
        awaitCompleted(scope(tenant, key));
        return body;
    }

    private static WebTestClient.ResponseSpec send(ConfigurableApplicationContext gateway, String path, String key,
            String tenant) {
        return client(gateway).post().uri(path).header("Idempotency-Key", key).header("X-Tenant-Id", tenant)
                .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"legalName\":\"ACME\"}").exchange();
    }

    private static WebTestClient client(ConfigurableApplicationContext gateway) {
        return WebTestClient.bindToServer()
                .baseUrl("http://127.0.0.1:" + gateway.getEnvironment().getRequiredProperty("local.server.port"))
                .responseTimeout(Duration.ofSeconds(10)).build();
    }

    /** The Redis key of the record for this tenant (through the header) and key. */
    private static String scope(String tenant, String key) {
        return RedisKeyspace.recordKey(scopeHash(tenant, key));
    }

    private static String scopeHash(String tenant, String key) {
        return new IdempotencyScope("header:" + tenant, "onboarding", new IdempotencyKey(key)).hash();
    }

    /** The client may have its answer a moment before the gateway stored it. */
    private static void awaitCompleted(String recordKey) {
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .concatMap(tick -> hashes().hGet(buffer(recordKey), buffer("state")).map(StandardCharsets.UTF_8::decode)
                        .map(Object::toString).defaultIfEmpty(""))
                .filter("COMPLETED"::equals).next().block(Duration.ofSeconds(10));
    }

    private static byte[] rawResponse(String recordKey) {
        ByteBuffer value = hashes().hGet(buffer(recordKey), buffer("response")).block(Duration.ofSeconds(5));
        byte[] bytes = new byte[value.remaining()];
        value.get(bytes);
        return bytes;
    }

    private static void hset(String recordKey, String field, byte[] value) {
        hashes().hSet(buffer(recordKey), buffer(field), ByteBuffer.wrap(value)).block(Duration.ofSeconds(5));
    }

    private static ReactiveHashCommands hashes() {
        return onlyK1.getBean(ReactiveRedisConnectionFactory.class).getReactiveConnection().hashCommands();
    }

    private static ByteBuffer buffer(String text) {
        return ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
    }
}
