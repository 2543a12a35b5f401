package dev.retrysafe.gateway.idempotency.filter;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.core.ScanOptions;
import reactor.core.publisher.Flux;

/** Points 4 and 10: scope = tenant + route + key, hashed in Redis; retention from completion. */
class ScopeAndRetentionIntegrationTest extends GatewayFilterTestBase {

    @Test
    void sameKeyFromTwoTenantsIsTwoOperations() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/tenants")).willReturn(aResponse().withStatus(202)
                .withTransformers("response-template").withBody("for {{request.headers.X-Tenant-Id}}")));

        client.post().uri("/merchants/tenants").header("Idempotency-Key", key).header("X-Tenant-Id", "tenant-a")
                .bodyValue("x").exchange().expectStatus().isEqualTo(202).expectBody(String.class).isEqualTo("for tenant-a");
        client.post().uri("/merchants/tenants").header("Idempotency-Key", key).header("X-Tenant-Id", "tenant-b")
                .bodyValue("x").exchange().expectStatus().isEqualTo(202).expectBody(String.class).isEqualTo("for tenant-b");
        client.post().uri("/merchants/tenants").header("Idempotency-Key", key).header("X-Tenant-Id", "tenant-a")
                .bodyValue("x").exchange().expectStatus().isOk().expectBody(String.class).isEqualTo("for tenant-a");
        client.post().uri("/merchants/tenants").header("Idempotency-Key", key).header("X-Tenant-Id", "tenant-b")
                .bodyValue("x").exchange().expectStatus().isOk().expectBody(String.class).isEqualTo("for tenant-b");
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo("/merchants/tenants")));
    }

    @Test
    void sameKeyOnTwoRoutesIsTwoOperations() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/x")).willReturn(aResponse().withStatus(202).withBody("a")));
        upstream.stubFor(post(urlEqualTo("/other/x")).willReturn(aResponse().withStatus(202).withBody("b")));
        client.post().uri("/merchants/x").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202);
        client.post().uri("/other/x").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202).expectBody(String.class).isEqualTo("b");
    }

    @Test
    void redisNeverHoldsTheRawTenantOrKey() {
        String key = "RawKeyThatMustNotLeak-" + System.nanoTime();
        String tenant = "tenant-secret-" + System.nanoTime();
        upstream.stubFor(post(urlEqualTo("/merchants/hashed")).willReturn(aResponse().withStatus(202).withBody("ok")));
        client.post().uri("/merchants/hashed").header("Idempotency-Key", key).header("X-Tenant-Id", tenant)
                .bodyValue("x").exchange().expectStatus().isEqualTo(202);

        List<String> keys = redis.scan(ScanOptions.scanOptions().match("*").count(1000).build())
                .collectList().block(Duration.ofSeconds(5));
        assertThat(keys).isNotEmpty().allSatisfy(k -> assertThat(k).startsWith("idempotency")
                .doesNotContain(key).doesNotContain(tenant));
        assertThat(keys).filteredOn(k -> k.startsWith(RedisKeyspace.PROCESS_LINK_PREFIX)).allSatisfy(k ->
                assertThat(redis.opsForValue().get(k).block()).doesNotContain(key).doesNotContain(tenant));
        assertThat(keys).filteredOn(k -> k.startsWith(RedisKeyspace.RECORD_PREFIX)).isNotEmpty().allSatisfy(k -> {
            Map<String, byte[]> fields = Flux.from(redisConnectionFactory.getReactiveConnection().hashCommands()
                            .hGetAll(java.nio.ByteBuffer.wrap(k.getBytes(StandardCharsets.UTF_8))))
                    .collectMap(e -> StandardCharsets.UTF_8.decode(e.getKey()).toString(),
                            e -> { byte[] b = new byte[e.getValue().remaining()]; e.getValue().get(b); return b; })
                    .block(Duration.ofSeconds(5));
            fields.values().forEach(value -> assertThat(new String(value, StandardCharsets.ISO_8859_1))
                    .doesNotContain(key).doesNotContain(tenant));
        });
    }

    @Test
    void retentionCountsFromCompletionAndTheLeaseBeforeIt() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/merchants/ttl")).willReturn(aResponse().withStatus(202)
                .withBody("ok").withFixedDelay(500)));
        var first = client.post().uri("/merchants/ttl").header("Idempotency-Key", key).bodyValue("x")
                .exchange().returnResult(String.class);
        assertThat(first.getStatus().value()).isEqualTo(202);
        String recordKey = onlyRecordFor("/merchants/ttl", key);
        // The client may read the response a moment before the gateway has stored it.
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .concatMap(t -> redis.<String, String>opsForHash().get(recordKey, "state").defaultIfEmpty(""))
                .filter("COMPLETED"::equals).next().block(Duration.ofSeconds(10));
        Duration ttl = redis.getExpire(recordKey).block(Duration.ofSeconds(5));
        // Default retention 24 h, applied when the response was stored.
        assertThat(ttl).isBetween(Duration.ofHours(24).minusMinutes(1), Duration.ofHours(24));
    }

    @Test
    void afterRetentionTheKeyIsFreeAgain() {
        String key = newKey();
        upstream.stubFor(post(urlEqualTo("/short-retention/x")).willReturn(aResponse().withStatus(202).withBody("ok")));
        client.post().uri("/short-retention/x").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202);
        client.post().uri("/short-retention/x").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk();
        String recordKey = onlyRecordFor("/short-retention/x", key);
        // Wait (bounded) for Redis to expire the record: retention is 300 ms on this route.
        Flux.interval(Duration.ofMillis(50)).onBackpressureDrop().concatMap(t -> redis.hasKey(recordKey)).filter(exists -> !exists)
                .next().timeout(Duration.ofSeconds(10)).block();
        client.post().uri("/short-retention/x").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202);
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo("/short-retention/x")));
    }

    /** The record key for a request, found through the scope hash the store uses. */
    private String onlyRecordFor(String path, String key) {
        String routeId = path.startsWith("/merchants") ? "onboarding" : "short-retention";
        return RedisKeyspace.recordKey(new dev.retrysafe.gateway.idempotency.scope.IdempotencyScope("",
                routeId, new dev.retrysafe.gateway.idempotency.key.IdempotencyKey(key)));
    }
}
