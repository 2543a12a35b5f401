package dev.retrysafe.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.onboarding.OnboardingBackendApplication;
import dev.retrysafe.gateway.support.RawHttpClient;
import dev.retrysafe.onboarding.OnboardingLedger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.ApplicationContext;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.server.WebFilter;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The shipped configuration ({@code config/application.yml}, profile {@code local} with its embedded Redis) in
 * front of the real sample Onboarding backend, over real HTTP: retries, parallel duplicates and conflicts leave
 * exactly one merchant behind.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "spring.config.additional-location=file:../../config/",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "management.server.port=0",
                // Only status reads through the gateway can end a process here: the poller waits an hour.
                "idempotency.process-poll.initial-delay=1h"})
@ActiveProfiles("local")
class OnboardingEndToEndIntegrationTest {
    static final ConfigurableApplicationContext backend = OnboardingBackendApplication.start(
            "--server.port=0", "--onboarding.processing-delay=300ms");
    static final ParameterizedTypeReference<Map<String, Object>> JSON = new ParameterizedTypeReference<>() {};
    static final String MERCHANT = """
            {"legalName":"Panadería Sol","taxId":"SOL1234567","email":"pagos@sol.example",
             "integrations":[{"type":"ERP","name":"sap"},{"type":"CRM","name":"hubspot"}],
             "paymentMethods":["CARD","PIX"],"sites":["https://sol.example"],
             "settings":{"currency":"BRL","notifications":{"email":true}}}""";
    static final String SAME_MERCHANT_REORDERED = """
            {"settings":{"notifications":{"email":true},"currency":"BRL"},"sites":["https://sol.example"],
             "paymentMethods":["PIX","CARD"],"integrations":[{"name":"hubspot","type":"CRM"},{"type":"ERP","name":"sap"}],
             "email":"pagos@sol.example","taxId":"SOL1234567","legalName":"Panadería Sol"}""";

    @LocalServerPort
    int port;

    @LocalManagementPort
    int managementPort;

    @Autowired
    ApplicationContext gatewayContext;

    @DynamicPropertySource
    static void backendUri(DynamicPropertyRegistry registry) {
        registry.add("onboarding.uri", () -> "http://127.0.0.1:" + backendPort());
    }

    @AfterAll
    static void stopBackend() {
        backend.close();
    }

    static int backendPort() {
        return backend.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    }

    WebClient gateway() {
        return WebClient.create("http://127.0.0.1:" + port);
    }

    Mono<ResponseEntity<Map<String, Object>>> create(String key, String body) {
        return gateway().post().uri("/merchants").header("Idempotency-Key", key)
                .contentType(MediaType.APPLICATION_JSON).bodyValue(body)
                .exchangeToMono(response -> response.toEntity(JSON));
    }

    /**
     * The docs' operator example goes on from the README's curl session: the lookup it shows (operation and key, no
     * tenant, as the session sent) finds the record that session's first request made, under the hash it shows.
     */
    @Test
    void theOperatorLookupInTheDocsFindsTheRecordOfTheReadmeSession() throws Exception {
        String readmeKey = "8f1c2d3e4a5b6c7d8e9f0a1b";
        String readmeBody = "{\"legalName\":\"ACME\",\"taxId\":\"ACME12345\",\"email\":\"a@acme.example\","
                + "\"paymentMethods\":[\"CARD\",\"PIX\"]}";
        assertThat(create(readmeKey, readmeBody).block(Duration.ofSeconds(10)).getStatusCode().value()).isEqualTo(202);
        String lookup = "/actuator/idempotency?operation=onboarding-merchants&key=" + readmeKey;
        String docs = Files.readString(Path.of("../../docs/operations/operator-api.md"));
        assertThat(docs).contains("localhost:9090" + lookup).contains("GwK3V1N9WAP7I5OKRJXLnaNSlEhxq6C2xE57Gp2Ipfk");

        Map<String, Object> record = WebClient.create("http://127.0.0.1:" + managementPort).get().uri(lookup)
                .headers(headers -> headers.setBasicAuth("operator", "local-operator"))
                .retrieve().bodyToMono(JSON).block(Duration.ofSeconds(10));
        assertThat(record).containsEntry("scopeHash", "GwK3V1N9WAP7I5OKRJXLnaNSlEhxq6C2xE57Gp2Ipfk")
                .containsEntry("route", "onboarding-merchants").containsEntry("operation", "onboarding-merchants")
                .containsEntry("state", "COMPLETED")
                .containsEntry("method", "POST").containsEntry("path", "/merchants");

        // Its merchant is created when the process ends: let it end here, not in the middle of another test's count.
        Flux.interval(Duration.ofMillis(50)).onBackpressureDrop()
                .concatMap(t -> gateway().get().uri("/processes/{id}", record.get("processId")).retrieve()
                        .bodyToMono(JSON))
                .filter(p -> !"PENDING".equals(p.get("status")))
                .next().block(Duration.ofSeconds(15));
    }

    @Test
    void fiftyConcurrentCreatesAndLaterRetriesMakeExactlyOneMerchant() {
        OnboardingLedger ledger = backend.getBean(OnboardingLedger.class);
        long createdBefore = ledger.merchantsCreated();
        String key = UUID.randomUUID().toString();

        List<ResponseEntity<Map<String, Object>>> burst = Flux.range(0, 50)
                .flatMap(i -> create(key, i % 2 == 0 ? MERCHANT : SAME_MERCHANT_REORDERED), 50)
                .collectList().block(Duration.ofSeconds(30));

        Map<Integer, Long> statuses = burst.stream()
                .collect(Collectors.groupingBy(r -> r.getStatusCode().value(), Collectors.counting()));
        assertThat(statuses).containsEntry(202, 1L).containsEntry(200, 49L);
        Set<Object> processIds = burst.stream().map(r -> r.getBody().get("processId")).collect(Collectors.toSet());
        assertThat(processIds).hasSize(1);
        String processId = (String) processIds.iterator().next();
        ResponseEntity<Map<String, Object>> original = burst.stream()
                .filter(r -> r.getStatusCode().value() == 202).findFirst().orElseThrow();
        assertThat(original.getHeaders().getLocation()).hasToString("/processes/" + processId);
        assertThat(burst).filteredOn(r -> r.getStatusCode().value() == 200).allSatisfy(r -> {
            assertThat(r.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
            assertThat(r.getHeaders().getLocation()).isNull();
            assertThat(r.getHeaders().getFirst("Retry-After")).isNotNull();
        });

        // The process ends in the backend; status reads pass through the gateway unguarded.
        Map<String, Object> process = Flux.interval(Duration.ofMillis(50)).onBackpressureDrop()
                .concatMap(t -> gateway().get().uri("/processes/{id}", processId).retrieve().bodyToMono(JSON))
                .filter(p -> !"PENDING".equals(p.get("status")))
                .next().block(Duration.ofSeconds(15));
        assertThat(process).containsEntry("status", "COMPLETED");

        // Retries after completion still get the original result, never a second merchant.
        List<ResponseEntity<Map<String, Object>>> retries = Flux.range(0, 5).concatMap(i -> create(key, MERCHANT))
                .collectList().block(Duration.ofSeconds(10));
        assertThat(retries).allSatisfy(r -> {
            assertThat(r.getStatusCode().value()).isEqualTo(200);
            assertThat(r.getBody()).containsEntry("processId", processId);
        });
        assertThat(ledger.merchantsCreated() - createdBefore).isEqualTo(1);
    }

    @Test
    void changedPayloadWithTheSameKeyIs409AndCreatesNothing() {
        OnboardingLedger ledger = backend.getBean(OnboardingLedger.class);
        String key = UUID.randomUUID().toString();
        assertThat(create(key, MERCHANT).block().getStatusCode().value()).isEqualTo(202);
        long writesBefore = ledger.writeRequests();

        ResponseEntity<Map<String, Object>> conflict = create(key,
                MERCHANT.replace("\"currency\":\"BRL\"", "\"currency\":\"USD\"")).block();
        assertThat(conflict.getStatusCode().value()).isEqualTo(409);
        assertThat(conflict.getBody()).extractingByKey("status").asInstanceOf(
                org.assertj.core.api.InstanceOfAssertFactories.MAP)
                .containsEntry("status", "FAILED").containsEntry("reason", 409)
                .containsEntry("message", "The idempotency key was already used with a different payload.");
        assertThat(ledger.writeRequests()).isEqualTo(writesBefore);
    }

    @Test
    void missingKeyIs422AndNeverReachesTheBackend() {
        OnboardingLedger ledger = backend.getBean(OnboardingLedger.class);
        long writesBefore = ledger.writeRequests();
        ResponseEntity<Map<String, Object>> response = gateway().post().uri("/merchants")
                .contentType(MediaType.APPLICATION_JSON).bodyValue(MERCHANT)
                .exchangeToMono(r -> r.toEntity(JSON)).block();
        assertThat(response.getStatusCode().value()).isEqualTo(422);
        assertThat(ledger.writeRequests()).isEqualTo(writesBefore);
    }

    /**
     * Spring Security's firewall still stands in front of the routes, which no security chain guards: a path it
     * refuses is a 400 in the gateway's envelope, and neither the store nor the backend hear of it.
     */
    @Test
    void aPathTheFirewallRefusesIs400InTheEnvelopeAndNeverReachesTheBackend() {
        assertThat(gatewayContext.getBeansOfType(WebFilter.class).values())
                .as("Spring Security's chain selection, with its fast way past")
                .extracting(filter -> filter.getClass().getSimpleName())
                .contains("SecurityChainSelection").doesNotContain("WebFilterChainProxy");
        OnboardingLedger ledger = backend.getBean(OnboardingLedger.class);
        long writesBefore = ledger.writeRequests();
        byte[] body = MERCHANT.getBytes(StandardCharsets.UTF_8);
        for (String path : List.of("/merchants;jsessionid=1", "/merchants%2Fx", "/%2e%2e/merchants")) {
            RawHttpClient.Response response = new RawHttpClient(port).send("POST " + path + " HTTP/1.1\r\n"
                    + "Host: 127.0.0.1\r\nIdempotency-Key: " + UUID.randomUUID() + "\r\n"
                    + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n", body,
                    Duration.ofSeconds(10));
            assertThat(response.status()).as(path).isEqualTo(400);
            assertThat(response.header("Content-Type")).as(path).startsWith("application/json");
            assertThat(response.bodyText()).as(path).contains("\"reason\":400")
                    .contains("characters the gateway does not forward");
        }
        assertThat(ledger.writeRequests()).isEqualTo(writesBefore);
    }

    @Test
    void reusingAKeyForAnotherMerchantIdIs409() {
        String merchantId = createdMerchantId();
        String key = UUID.randomUUID().toString();
        String update = "{\"legalName\":\"Panadería Sol Ltda\",\"taxId\":\"SOL1234567\",\"email\":\"a@sol.example\"}";
        ResponseEntity<Map<String, Object>> first = gateway().put().uri("/merchants/{id}", merchantId)
                .header("Idempotency-Key", key).contentType(MediaType.APPLICATION_JSON).bodyValue(update)
                .exchangeToMono(r -> r.toEntity(JSON)).block();
        assertThat(first.getStatusCode().value()).isEqualTo(202);
        ResponseEntity<Map<String, Object>> other = gateway().put().uri("/merchants/{id}", "another-merchant")
                .header("Idempotency-Key", key).contentType(MediaType.APPLICATION_JSON).bodyValue(update)
                .exchangeToMono(r -> r.toEntity(JSON)).block();
        assertThat(other.getStatusCode().value()).isEqualTo(409);
    }

    @Test
    void theKeyStaysBoundUntilTheProcessEndsThenForTheRetentionAndReplaysDropRetryAfter() {
        String key = UUID.randomUUID().toString();
        ResponseEntity<Map<String, Object>> accepted = create(key, MERCHANT).block();
        assertThat(accepted.getStatusCode().value()).isEqualTo(202);
        String processId = (String) accepted.getBody().get("processId");
        String record = recordKey(key);
        // The client may read the 202 a moment before the gateway has stored it.
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .concatMap(t -> redis().<String, String>opsForHash().get(record, "state").defaultIfEmpty(""))
                .filter("COMPLETED"::equals).next().block(Duration.ofSeconds(10));
        assertThat(redis().getExpire(record).block()).as("bound for the hard cap while the process runs")
                .isGreaterThan(Duration.ofDays(6));

        ResponseEntity<Map<String, Object>> whileRunning = create(key, MERCHANT).block();
        assertThat(whileRunning.getStatusCode().value()).isEqualTo(200);
        assertThat(whileRunning.getHeaders().getFirst("Retry-After")).isNotNull();

        // An integrator reads the process status through the gateway until it ends.
        Flux.interval(Duration.ofMillis(50)).onBackpressureDrop()
                .concatMap(t -> gateway().get().uri("/processes/{id}", processId).retrieve().bodyToMono(JSON))
                .filter(p -> !"PENDING".equals(p.get("status")))
                .next().block(Duration.ofSeconds(15));
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop()
                .concatMap(t -> redis().<String, String>opsForHash().get(record, "process_state").defaultIfEmpty(""))
                .filter("ENDED"::equals).next().block(Duration.ofSeconds(10));

        assertThat(redis().getExpire(record).block()).as("24 h counted from the end of the process")
                .isBetween(Duration.ofHours(24).minusMinutes(1), Duration.ofHours(24));
        ResponseEntity<Map<String, Object>> afterEnd = create(key, MERCHANT).block();
        assertThat(afterEnd.getStatusCode().value()).isEqualTo(200);
        assertThat(afterEnd.getBody()).containsEntry("processId", processId);
        assertThat(afterEnd.getHeaders().getFirst("Retry-After")).as("nothing left to wait for").isNull();
    }

    @org.springframework.beans.factory.annotation.Autowired
    org.springframework.data.redis.connection.ReactiveRedisConnectionFactory redisConnections;

    org.springframework.data.redis.core.ReactiveStringRedisTemplate redis() {
        return new org.springframework.data.redis.core.ReactiveStringRedisTemplate(redisConnections);
    }

    static String recordKey(String key) {
        return dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace.recordKey(
                new dev.retrysafe.gateway.idempotency.scope.IdempotencyScope("", "onboarding-merchants",
                        new dev.retrysafe.gateway.idempotency.key.IdempotencyKey(key)));
    }

    private String createdMerchantId() {
        Map<String, Object> accepted = create(UUID.randomUUID().toString(), MERCHANT).block().getBody();
        Map<String, Object> process = Flux.interval(Duration.ofMillis(50)).onBackpressureDrop()
                .concatMap(t -> gateway().get().uri("/processes/{id}", accepted.get("processId")).retrieve().bodyToMono(JSON))
                .filter(p -> !"PENDING".equals(p.get("status")))
                .next().block(Duration.ofSeconds(15));
        return (String) process.get("merchantId");
    }
}
