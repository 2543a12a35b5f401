package dev.retrysafe.onboarding;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Mono;

import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real HTTP against backends started the way the gateway's tests start them: {@link OnboardingBackendApplication#start}
 * on a random port. Two run side by side in this JVM: a fast one whose writes settle after 100 ms, and a slow one
 * whose writes stay PENDING for the whole run, so that PENDING can be observed without racing the timer.
 */
class OnboardingBackendTest {

    private static final ParameterizedTypeReference<Map<String, Object>> JSON = new ParameterizedTypeReference<>() {
    };

    /** The fast backend keeps the development default; the slow one is given its own, as a deployment would. */
    private static final String FAST_LOOKUP = "Bearer " + OnboardingProperties.DEVELOPMENT_LOOKUP_TOKEN;

    private static final String SLOW_LOOKUP_TOKEN = "slow-backend-lookup-token";

    private static ConfigurableApplicationContext fast;

    private static ConfigurableApplicationContext slow;

    private static WebTestClient client;

    private static WebTestClient slowClient;

    private static WebClient poller;

    private static OnboardingLedger ledger;

    @BeforeAll
    static void startBackends() {
        fast = OnboardingBackendApplication.start("--server.port=0", "--onboarding.processing-delay=100ms");
        slow = OnboardingBackendApplication.start("--server.port=0", "--onboarding.processing-delay=10m",
                "--onboarding.retry-after=7s", "--onboarding.lookup-token=" + SLOW_LOOKUP_TOKEN);
        client = WebTestClient.bindToServer().baseUrl(baseUrl(fast)).build();
        slowClient = WebTestClient.bindToServer().baseUrl(baseUrl(slow)).build();
        poller = WebClient.create(baseUrl(fast));
        ledger = fast.getBean(OnboardingLedger.class);
    }

    @AfterAll
    static void stopBackends() {
        if (fast != null) {
            fast.close();
        }
        if (slow != null) {
            slow.close();
        }
    }

    @Test
    void startsUnderItsOwnConfigNameWithoutAnApplicationFile() {
        assertThat(fast.getEnvironment().getProperty("spring.application.name")).isEqualTo("onboarding-backend");
        assertThat(baseUrl(fast)).isNotEqualTo(baseUrl(slow));
        // An application.* file here would be loaded by the gateway, which has this jar on its test classpath.
        for (String name : List.of("application.properties", "application.yml", "application.yaml")) {
            assertThat(OnboardingBackendApplication.class.getClassLoader().getResource(name)).as(name).isNull();
        }
    }

    @Test
    void postAnswers202WithProcessIdLocationAndRetryAfterThenCompletes() {
        EntityExchangeResult<Map<String, Object>> result = client.post().uri("/merchants")
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue(merchant("ACME Trading", "ACME1234"))
                .exchange()
                .expectStatus().isAccepted()
                .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "1")
                .expectBody(JSON).returnResult();

        Map<String, Object> accepted = result.getResponseBody();
        String processId = (String) accepted.get("processId");
        assertThat(accepted).containsEntry("status", "PENDING").containsOnlyKeys("processId", "status");
        assertThat(processId).matches("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
        assertThat(result.getResponseHeaders().getFirst(HttpHeaders.LOCATION)).isEqualTo("/processes/" + processId);

        Map<String, Object> outcome = awaitOutcome(processId);
        assertThat(outcome).containsEntry("status", "COMPLETED").containsEntry("processId", processId)
                .doesNotContainKey("reasons");
        String merchantId = (String) outcome.get("merchantId");

        client.get().uri("/merchants/" + merchantId).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.id").isEqualTo(merchantId)
                .jsonPath("$.legalName").isEqualTo("ACME Trading")
                .jsonPath("$.taxId").isEqualTo("ACME1234")
                .jsonPath("$.email").isEqualTo("ops@acme.example")
                .jsonPath("$.integrations[0]").isEqualTo("shopify")
                .jsonPath("$.paymentMethods[0].type").isEqualTo("card")
                .jsonPath("$.sites[0].url").isEqualTo("https://acme.example")
                .jsonPath("$.settings.currency").isEqualTo("EUR");
    }

    @Test
    void aWriteCanBeLookedUpByItsIdempotencyKeyAndItsMerchantByTaxId() {
        String key = "lookup-" + java.util.UUID.randomUUID();
        String processId = client.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON)
                .header("Idempotency-Key", key)
                .bodyValue(merchant("Lookup Co", "LOOKUP1234"))
                .exchange()
                .expectStatus().isAccepted()
                .expectBody(JSON).returnResult().getResponseBody().get("processId").toString();

        client.get().uri("/processes/by-idempotency-key/{key}", key).header(HttpHeaders.AUTHORIZATION, FAST_LOOKUP)
                .exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.processId").isEqualTo(processId);
        awaitOutcome(processId);
        client.get().uri("/merchants/by-tax-id/LOOKUP1234").exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.legalName").isEqualTo("Lookup Co");

        client.get().uri("/processes/by-idempotency-key/never-sent-key").header(HttpHeaders.AUTHORIZATION, FAST_LOOKUP)
                .exchange().expectStatus().isNotFound();
        client.get().uri("/merchants/by-tax-id/NOSUCH1234").exchange().expectStatus().isNotFound();
    }

    /**
     * The lookup by key says which writes this backend received, so it wants the lookup token, as a real team's
     * would: without it, with another, or sent twice it is 401 and says nothing, whether the write exists or not.
     */
    @Test
    void theLookupByIdempotencyKeyRequiresTheBearerToken() {
        String key = "guarded-" + java.util.UUID.randomUUID();
        slowClient.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON).header("Idempotency-Key", key)
                .bodyValue(merchant("Guarded Co", "GUARD12345")).exchange().expectStatus().isAccepted();

        for (String other : List.of(key, "never-sent-key")) {
            slowClient.get().uri("/processes/by-idempotency-key/{key}", other).exchange()
                    .expectStatus().isUnauthorized()
                    .expectHeader().valueEquals(HttpHeaders.WWW_AUTHENTICATE, "Bearer")
                    .expectBody().jsonPath("$.error").isEqualTo("unauthorized");
        }
        slowClient.get().uri("/processes/by-idempotency-key/{key}", key)
                .header(HttpHeaders.AUTHORIZATION, FAST_LOOKUP).exchange().expectStatus().isUnauthorized();
        slowClient.get().uri("/processes/by-idempotency-key/{key}", key)
                .header(HttpHeaders.AUTHORIZATION, "Bearer " + SLOW_LOOKUP_TOKEN, "Bearer " + SLOW_LOOKUP_TOKEN)
                .exchange().expectStatus().isUnauthorized();
        slowClient.get().uri("/processes/by-idempotency-key/{key}", key)
                .header(HttpHeaders.AUTHORIZATION, "Bearer " + SLOW_LOOKUP_TOKEN).exchange().expectStatus().isOk();
        assertThat(fast.getEnvironment().getProperty("onboarding.lookup-token"))
                .as("out of the box, no ONBOARDING_LOOKUP_TOKEN").isEqualTo(OnboardingProperties.DEVELOPMENT_LOOKUP_TOKEN);
    }

    @Test
    void processStaysPendingWithRetryAfterWhileTheWriteIsProcessed() {
        String processId = slowClient.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON)
                .bodyValue(merchant("Slow Co", "SLOW12345"))
                .exchange()
                .expectStatus().isAccepted()
                .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "7")
                .expectBody(JSON).returnResult().getResponseBody().get("processId").toString();

        slowClient.get().uri("/processes/" + processId).exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "7")
                .expectBody()
                .jsonPath("$.processId").isEqualTo(processId)
                .jsonPath("$.status").isEqualTo("PENDING")
                .jsonPath("$.merchantId").doesNotExist()
                .jsonPath("$.reasons").doesNotExist();
        assertThat(slow.getBean(OnboardingLedger.class).merchantsCreated()).isZero();
    }

    @Test
    void putAnswers202AndUpdatesTheMerchant() {
        String merchantId = (String) awaitOutcome(post(merchant("Old Name Ltd", "OLDTAX123"))).get("merchantId");
        long updatedBefore = ledger.merchantsUpdated();

        Map<String, Object> accepted = client.put().uri("/merchants/" + merchantId)
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue(merchant("New Name Ltd", "NEWTAX123"))
                .exchange()
                .expectStatus().isAccepted()
                .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "1")
                .expectHeader().value(HttpHeaders.LOCATION, location -> assertThat(location).startsWith("/processes/"))
                .expectBody(JSON).returnResult().getResponseBody();
        assertThat(accepted).containsEntry("status", "PENDING").containsKey("processId");

        assertThat(awaitOutcome((String) accepted.get("processId")))
                .containsEntry("status", "COMPLETED").containsEntry("merchantId", merchantId);
        client.get().uri("/merchants/" + merchantId).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.legalName").isEqualTo("New Name Ltd")
                .jsonPath("$.taxId").isEqualTo("NEWTAX123");
        assertThat(ledger.merchantsUpdated()).isEqualTo(updatedBefore + 1);
    }

    @Test
    void putOfAnUnknownMerchantEndsFailed() {
        String processId = client.put().uri("/merchants/no-such-merchant").contentType(MediaType.APPLICATION_JSON)
                .bodyValue(merchant("Ghost Ltd", "GHOST1234"))
                .exchange()
                .expectStatus().isAccepted()
                .expectBody(JSON).returnResult().getResponseBody().get("processId").toString();

        assertThat(awaitOutcome(processId)).containsEntry("status", "FAILED")
                .containsEntry("reasons", List.of("merchant no-such-merchant does not exist"))
                .doesNotContainKey("merchantId");
    }

    @Test
    void invalidMerchantEndsFailedWithReasonsAndCreatesNothing() {
        long createdBefore = ledger.merchantsCreated();

        String processId = post("""
                {"taxId": "12-34", "email": "not-an-address", "sites": []}
                """);

        assertThat(awaitOutcome(processId)).containsEntry("status", "FAILED")
                .containsEntry("reasons", List.of("legalName is required", "taxId must be 8-15 letters or digits",
                        "email must be an e-mail address"))
                .doesNotContainKey("merchantId");
        assertThat(ledger.merchantsCreated()).isEqualTo(createdBefore);
    }

    @Test
    void twoIdenticalPostsCreateTwoMerchantsBecauseThereIsNoIdempotency() {
        long createdBefore = ledger.merchantsCreated();
        long writesBefore = ledger.writeRequests();
        String body = merchant("Twice Ltd", "TWICE1234");

        String first = post(body);
        String second = post(body);

        assertThat(first).isNotEqualTo(second);
        Object firstMerchant = awaitOutcome(first).get("merchantId");
        Object secondMerchant = awaitOutcome(second).get("merchantId");
        assertThat(firstMerchant).isNotNull().isNotEqualTo(secondMerchant);
        assertThat(ledger.merchantsCreated()).isGreaterThanOrEqualTo(createdBefore + 2);
        assertThat(ledger.writeRequests()).isGreaterThanOrEqualTo(writesBefore + 2);

        // /stats shows the same counters as the bean.
        Map<String, Object> stats = client.get().uri("/stats").exchange()
                .expectStatus().isOk()
                .expectBody(JSON).returnResult().getResponseBody();
        assertThat(stats).containsOnlyKeys("merchantsCreated", "merchantsUpdated", "writeRequests");
        assertThat(((Number) stats.get("merchantsCreated")).longValue()).isGreaterThanOrEqualTo(createdBefore + 2);
    }

    @Test
    void bodyThatIsNotJsonIs400AtOnceAndStillCountsAsAWriteRequest() {
        long writesBefore = ledger.writeRequests();

        client.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"legalName\": \"Broken")
                .exchange()
                .expectStatus().isBadRequest()
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectHeader().doesNotExist(HttpHeaders.LOCATION)
                .expectBody()
                .jsonPath("$.error").isEqualTo("invalid_json")
                .jsonPath("$.processId").doesNotExist();
        client.put().uri("/merchants/anything").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("not json at all")
                .exchange()
                .expectStatus().isBadRequest()
                .expectBody().jsonPath("$.error").isEqualTo("invalid_json");
        client.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON)
                .exchange()
                .expectStatus().isBadRequest()
                .expectBody().jsonPath("$.error").isEqualTo("invalid_request");

        assertThat(ledger.writeRequests()).isGreaterThanOrEqualTo(writesBefore + 3);
    }

    @Test
    void unknownProcessAndMerchantAre404() {
        client.get().uri("/processes/no-such-process").exchange()
                .expectStatus().isNotFound()
                .expectBody().jsonPath("$.error").isEqualTo("not_found");
        client.get().uri("/merchants/no-such-merchant").exchange()
                .expectStatus().isNotFound()
                .expectBody().jsonPath("$.error").isEqualTo("not_found");
    }

    @Test
    void writeLogHasOneLinePerAcceptedWriteWithItsKeyAndProcessAndNothingForRefusedOnes(@TempDir Path dir)
            throws Exception {
        Path file = dir.resolve("writes.tsv");
        ConfigurableApplicationContext logging = OnboardingBackendApplication.start("--server.port=0",
                "--onboarding.write-log=" + file);
        try {
            WebTestClient logged = WebTestClient.bindToServer().baseUrl(baseUrl(logging)).build();
            String created = logged.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON)
                    .header("Idempotency-Key", "key-0001-aaaa-bbbb").bodyValue(merchant("ACME", "ACME1234"))
                    .exchange().expectStatus().isAccepted()
                    .expectBody(JSON).returnResult().getResponseBody().get("processId").toString();
            // A key cannot start a line or a column of its own.
            String updated = logged.put().uri("/merchants/m-1").contentType(MediaType.APPLICATION_JSON)
                    .header("Idempotency-Key", "evil\tkey").bodyValue(merchant("ACME", "ACME1234"))
                    .exchange().expectStatus().isAccepted()
                    .expectBody(JSON).returnResult().getResponseBody().get("processId").toString();
            logged.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON).bodyValue("{not json")
                    .exchange().expectStatus().isBadRequest();
            String keyless = logged.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON)
                    .bodyValue(merchant("Globex", "GLOB1234"))
                    .exchange().expectStatus().isAccepted()
                    .expectBody(JSON).returnResult().getResponseBody().get("processId").toString();

            List<String[]> lines = Files.readAllLines(file).stream().map(line -> line.split("\t", -1)).toList();
            assertThat(lines).hasSize(3).allSatisfy(fields -> {
                assertThat(fields).hasSize(5);
                assertThat(Long.parseLong(fields[0])).isPositive();
            });
            assertThat(lines.get(0)).endsWith("POST", "/merchants", "key-0001-aaaa-bbbb", created);
            assertThat(lines.get(1)).endsWith("PUT", "/merchants/m-1", "evil?key", updated);
            assertThat(lines.get(2)).endsWith("POST", "/merchants", "-", keyless);
        }
        finally {
            logging.close();
        }
    }

    @Test
    void closingOneBackendLeavesTheOthersInThisJvmServing() {
        // The gateway's tests close their backend while other contexts live on: nothing JVM-wide may go with it.
        ConfigurableApplicationContext shortLived = OnboardingBackendApplication.start("--server.port=0");
        WebTestClient.bindToServer().baseUrl(baseUrl(shortLived)).build()
                .get().uri("/stats").exchange().expectStatus().isOk();
        shortLived.close();

        client.get().uri("/stats").exchange().expectStatus().isOk();
        slowClient.get().uri("/stats").exchange().expectStatus().isOk();
    }

    /** POSTs a merchant, expects 202, and returns the process id. */
    private static String post(String body) {
        return client.post().uri("/merchants").contentType(MediaType.APPLICATION_JSON).bodyValue(body)
                .exchange()
                .expectStatus().isAccepted()
                .expectBody(JSON).returnResult().getResponseBody().get("processId").toString();
    }

    /** Polls the process (every 20 ms, at most 250 times) until it is no longer PENDING. */
    private static Map<String, Object> awaitOutcome(String processId) {
        Mono<Map<String, Object>> settled = poller.get().uri("/processes/{id}", processId)
                .retrieve().bodyToMono(JSON)
                .filter(process -> !"PENDING".equals(process.get("status")))
                .repeatWhenEmpty(250, attempts -> attempts.delayElements(Duration.ofMillis(20)));
        return settled.block(Duration.ofSeconds(10));
    }

    private static String merchant(String legalName, String taxId) {
        return """
                {"legalName": "%s", "taxId": "%s", "email": "ops@acme.example",
                 "integrations": ["shopify"], "paymentMethods": [{"type": "card"}],
                 "sites": [{"url": "https://acme.example"}], "settings": {"currency": "EUR"}}
                """.formatted(legalName, taxId);
    }

    private static String baseUrl(ConfigurableApplicationContext context) {
        return "http://localhost:" + context.getEnvironment().getRequiredProperty("local.server.port");
    }
}
