package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import reactor.core.publisher.Flux;

/** Issue 10, point 5: a tenant header naming two tenants is refused like two different keys, never joined. */
@ExtendWith(OutputCaptureExtension.class)
class TenantHeaderIntegrationTest extends GatewayFilterTestBase {

    static Stream<List<String>> twoTenants() {
        return Stream.of(List.of("acme", "globex"), List.of("acme,globex"), List.of("acme", "acme, globex"),
                List.of("", "acme"));
    }

    @ParameterizedTest
    @MethodSource("twoTenants")
    void aTenantHeaderNamingTwoTenantsIs422AndNothingIsReservedOrForwarded(List<String> values, CapturedOutput output) {
        String key = newKey();
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(202)));

        client.post().uri("/merchants/tenants").header("Idempotency-Key", key)
                .header("X-Tenant-Id", values.toArray(String[]::new)).bodyValue("x")
                .exchange()
                .expectStatus().isEqualTo(422)
                .expectBody()
                .jsonPath("$.status.reason").isEqualTo(422)
                .jsonPath("$.status.message").isEqualTo(GatewayError.invalidTenant("X-Tenant-Id").message());

        upstream.verify(exactly(0), anyRequestedFor(anyUrl()));
        for (String tenant : List.of("", "header:", "header:acme", "header:globex", "header:acme,globex",
                "header:acme, globex", "header:acme,acme, globex", "header:,acme")) {
            String record = RedisKeyspace.recordKey(
                    new IdempotencyScope(tenant, "onboarding", new IdempotencyKey(key)));
            assertThat(redis.hasKey(record).block(Duration.ofSeconds(5))).as("record for %s", tenant).isFalse();
        }
        // The log line is written as the answer is, not necessarily before the client has read it.
        String logged = Flux.interval(Duration.ofMillis(10)).onBackpressureDrop().map(t -> output.getAll())
                .filter(all -> all.contains("outcome=invalid-tenant route=onboarding method=POST status=422"))
                .next().block(Duration.ofSeconds(5));
        assertThat(logged).isNotNull();
    }

    @Test
    void theSameTenantSentTwiceIsThatOneTenant() {
        String key = newKey();
        upstream.stubFor(any(anyUrl()).willReturn(aResponse().withStatus(202).withBody("created")));

        client.post().uri("/merchants/tenants").header("Idempotency-Key", key).header("X-Tenant-Id", "acme", "acme")
                .bodyValue("x").exchange().expectStatus().isEqualTo(202);
        client.post().uri("/merchants/tenants").header("Idempotency-Key", key).header("X-Tenant-Id", "acme")
                .bodyValue("x").exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true");
        upstream.verify(exactly(1), anyRequestedFor(anyUrl()));
    }
}
