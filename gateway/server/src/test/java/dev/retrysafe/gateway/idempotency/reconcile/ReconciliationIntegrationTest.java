package dev.retrysafe.gateway.idempotency.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LookupUpstream;
import dev.retrysafe.gateway.support.LookupUpstream.Answer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Issue 22: an UNCERTAIN request (sent, the answer never came: the backend holds it past the gateway's response
 * timeout) is looked up at the route's own upstream by the route's {@code reconcile-uri} once
 * {@code reconcile-after} has passed, and settled by the answer: released when the backend never received it, so
 * the retry is forwarded once; completed from the lookup when it did, and replayed saying so; left UNCERTAIN and
 * asked again when the lookup tells nothing. Real sockets, a real Redis, whole gateways.
 */
class ReconciliationIntegrationTest {
    static final Duration WAIT = Duration.ofSeconds(60);
    static final String BY_KEY = "GET /merchants/by-idempotency-key/";
    /** A Redis of each test's own: a record another test left UNCERTAIN must not be looked up here. */
    final EmbeddedRedisServer redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
    final LookupUpstream upstream = new LookupUpstream();
    ConfigurableApplicationContext gateway;
    ConfigurableApplicationContext other;

    @AfterEach
    void stop() throws Exception {
        for (ConfigurableApplicationContext context : new ConfigurableApplicationContext[] {other, gateway}) {
            if (context != null) {
                context.close();
            }
        }
        upstream.close();
        redis.stop();
    }

    /** A gateway whose route reconciles by {@code template}, its response timeout one second. */
    ConfigurableApplicationContext gateway(String template, String after) {
        return gateway(template, after, Map.of());
    }

    /** The same, with more settings (route args under {@code args.}). */
    ConfigurableApplicationContext gateway(String template, String after, Map<String, String> more) {
        String args = "spring.cloud.gateway.server.webflux.routes[0].filters[0].args.";
        Map<String, String> settings = new HashMap<>(Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", String.valueOf(redis.port()),
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout", "1s",
                "idempotency.record-counts.enabled", "false",
                "idempotency.reconcile.interval", "50ms",
                "idempotency.reconcile.retry-delay", "100ms",
                "idempotency.reconcile.max-retry-delay", "200ms"));
        settings.put(args + "reconcile-uri", template);
        settings.put(args + "reconcile-after", after);
        more.forEach((name, value) -> settings.put(name.startsWith("args.") ? args + name.substring(5) : name, value));
        return Gateways.start("http://127.0.0.1:" + upstream.port(), settings);
    }

    @Test
    void anUncertainRequestTheBackendNeverReceivedIsReleasedAndItsRetryForwardedOnce() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms");
        AtomicInteger posts = new AtomicInteger();
        upstream.answer(request -> {
            if (request.startsWith(BY_KEY)) {
                return Answer.json(404, "{\"error\":\"not_found\"}");
            }
            // The first POST is lost on its way (held, never answered); the retry is answered.
            return posts.incrementAndGet() == 1 ? Answer.NONE
                    : Answer.json(202, "{\"processId\":\"p-2\",\"status\":\"PENDING\"}");
        });
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).as("outcome unknown").isEqualTo(504);
        await(() -> reconciliations(gateway, "not-found") == 1);

        ResponseEntity<String> retry = send(gateway, key);
        assertThat(retry.getStatusCode().value()).isEqualTo(202);
        assertThat(retry.getHeaders().getFirst("Idempotency-Replayed")).isNull();
        assertThat(retry.getBody()).contains("p-2");
        ResponseEntity<String> again = send(gateway, key);
        assertThat(again.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(again.getHeaders().getFirst("Idempotency-Reconciled")).isNull();
        assertThat(upstream.received("POST /merchants")).as("the original and the retry, once").isEqualTo(2);
        assertThat(upstream.received()).contains(BY_KEY + key);
        assertThat(upstream.received(BY_KEY)).isEqualTo(1);
    }

    @Test
    void anUncertainRequestTheBackendReceivedIsCompletedFromTheLookupAndReplayedAsReconciled() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms");
        String found = "{\"processId\":\"p-1\",\"status\":\"COMPLETED\",\"merchantId\":\"m-1\"}";
        upstream.answer(request -> request.startsWith(BY_KEY) ? Answer.json(200, found) : Answer.NONE);
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).isEqualTo(504);
        await(() -> reconciliations(gateway, "found") == 1);

        ResponseEntity<String> replay = send(gateway, key);
        assertThat(replay.getStatusCode().value()).isEqualTo(200);
        assertThat(replay.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(replay.getHeaders().getFirst("Idempotency-Reconciled")).isEqualTo("true");
        assertThat(replay.getHeaders().getFirst("Content-Type")).isEqualTo("application/json");
        assertThat(replay.getBody()).isEqualTo(found);
        assertThat(upstream.received("POST /merchants")).as("never sent again").isEqualTo(1);
    }

    /** WebClient's own buffer stops at 256 KB: a longer found answer was a failed lookup, asked again until retention. */
    @Test
    void aFoundAnswerLongerThanWebClientsBufferIsStoredWithinTheRoutesLimitAndReplayedWhole() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms");
        String found = "{\"processId\":\"p-1\",\"status\":\"COMPLETED\",\"notes\":\"" + "n".repeat(300 * 1024)
                + "\"}";
        upstream.answer(request -> request.startsWith(BY_KEY) ? Answer.json(200, found) : Answer.NONE);
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).isEqualTo(504);
        await(() -> reconciliations(gateway, "found") == 1);

        ResponseEntity<String> replay = send(gateway, key);
        assertThat(replay.getHeaders().getFirst("Idempotency-Reconciled")).isEqualTo("true");
        assertThat(replay.getBody()).isEqualTo(found);
        assertThat(reconciliations(gateway, "failed")).isZero();
        assertThat(upstream.received("POST /merchants")).as("never sent again").isEqualTo(1);
    }

    /** A backend that answers lookups only with its bearer token, given from a property as a real team would. */
    @Test
    void anUncertainRecordOnARouteWhoseBackendWantsABearerTokenIsSettledByTheLookup() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms", Map.of(
                "backend.lookup-token", "s3cr3t-for-lookups",
                "args.reconcile-headers[0]", "Authorization: Bearer ${backend.lookup-token}"));
        String found = "{\"processId\":\"p-1\",\"status\":\"COMPLETED\"}";
        upstream.answerByHead((request, head) -> !request.startsWith(BY_KEY) ? Answer.NONE
                : head.contains("\r\nAuthorization: Bearer s3cr3t-for-lookups\r\n") ? Answer.json(200, found)
                : Answer.json(401, "{\"error\":\"unauthorized\"}"));
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).isEqualTo(504);
        await(() -> reconciliations(gateway, "found") == 1);

        assertThat(send(gateway, key).getBody()).isEqualTo(found);
        assertThat(reconciliations(gateway, "credentials")).isZero();
    }

    @Test
    void aLookupCarriesTheOriginalRequestsForwardedHeaderAndItIsDroppedWhenTheRecordSettles() throws Exception {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms",
                Map.of("args.reconcile-forward-headers[0]", "Authorization"));
        String found = "{\"processId\":\"p-1\",\"status\":\"COMPLETED\"}";
        upstream.answerByHead((request, head) -> !request.startsWith(BY_KEY) ? Answer.NONE
                : head.contains("\r\nAuthorization: Bearer the-clients-own\r\n") ? Answer.json(200, found)
                : Answer.json(403, "{\"error\":\"forbidden\"}"));
        String key = UUID.randomUUID().toString();

        ResponseEntity<String> first = Gateways.client(gateway).post().uri("/merchants").header("Idempotency-Key", key)
                .header("Authorization", "Bearer the-clients-own").header("Content-Type", "application/json")
                .bodyValue("{\"legalName\":\"ACME\",\"taxId\":\"ACME1234\"}")
                .exchangeToMono(r -> r.toEntity(String.class)).block(WAIT);
        assertThat(first.getStatusCode().value()).isEqualTo(504);
        await(() -> reconciliations(gateway, "found") == 1);

        try (var redisClient = io.lettuce.core.RedisClient.create("redis://127.0.0.1:" + redis.port());
                var connection = redisClient.connect()) {
            List<String> records = connection.sync().keys("idempotency:{*");
            assertThat(records).hasSize(1);
            assertThat(connection.sync().hget(records.get(0), "state")).isEqualTo("COMPLETED");
            assertThat(connection.sync().hexists(records.get(0), "lookup")).as("the credential went with it").isFalse();
        }
    }

    /**
     * The lookup finds the write, but its process still runs: the key stays bound until the process ends (the
     * contract counts 24 hours from the end of the process), polled by the fleet as a stored 202's process is.
     */
    @Test
    void aFoundAnswerNamingARunningProcessIsTrackedUntilTheProcessEnds() throws Exception {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms", Map.of(
                "args.process-status-uri", "/processes/{processId}",
                "idempotency.process-poll.initial-delay", "100ms",
                "idempotency.process-poll.max-delay", "200ms"));
        String found = "{\"processId\":\"p-9\",\"status\":\"PENDING\"}";
        AtomicInteger polls = new AtomicInteger();
        upstream.answer(request -> {
            if (request.startsWith(BY_KEY)) {
                return Answer.json(200, found);
            }
            if (request.startsWith("GET /processes/p-9")) {
                // Running for the first poll, ended at the second.
                return Answer.json(200, polls.incrementAndGet() == 1 ? found
                        : "{\"processId\":\"p-9\",\"status\":\"COMPLETED\"}");
            }
            return Answer.NONE;
        });
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).isEqualTo(504);
        await(() -> reconciliations(gateway, "found") == 1);
        try (var redisClient = io.lettuce.core.RedisClient.create("redis://127.0.0.1:" + redis.port());
                var connection = redisClient.connect()) {
            List<String> records = connection.sync().keys("idempotency:{*");
            assertThat(records).hasSize(1);
            String record = records.get(0);
            assertThat(connection.sync().hget(record, "state")).isEqualTo("COMPLETED");
            await(() -> "ENDED".equals(connection.sync().hget(record, "process_state")));
            assertThat(connection.sync().hget(record, "process_id")).isEqualTo("p-9");
            assertThat(polls.get()).as("polled while it ran, and once more to see it end").isEqualTo(2);
            assertThat(connection.sync().pttl(record)).as("kept for the retention from the process's end")
                    .isBetween(Duration.ofHours(23).toMillis(), Duration.ofHours(24).toMillis());
        }
        assertThat(send(gateway, key).getBody()).isEqualTo(found);
        assertThat(upstream.received("POST /merchants")).as("never sent again").isEqualTo(1);
    }

    /**
     * Redis forgets everything while the request is out (a restart without persistence): the mark that the outcome is
     * unknown writes the record anew, with its lookup values, so the retry is not forwarded as if it had never been
     * sent, and the lookup settles it.
     */
    @Test
    void anUncertainMarkAfterRedisForgotTheRecordWritesItAnewAndItsLookupSettlesIt() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms");
        String found = "{\"processId\":\"p-1\",\"status\":\"COMPLETED\"}";
        AtomicInteger posts = new AtomicInteger();
        upstream.answer(request -> {
            if (request.startsWith(BY_KEY)) {
                return Answer.json(200, found);
            }
            if (posts.incrementAndGet() == 1) {
                // Forgotten while the request is here, before the gateway can give up on it.
                try (var redisClient = io.lettuce.core.RedisClient.create("redis://127.0.0.1:" + redis.port());
                        var connection = redisClient.connect()) {
                    connection.sync().flushall();
                }
            }
            return Answer.NONE;
        });
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).isEqualTo(504);
        // The mark may land just after the 504 is sent: the retry is sent once it has.
        await(() -> events(gateway, "store-restored") == 1);
        ResponseEntity<String> retry = send(gateway, key);
        assertThat(retry.getStatusCode().value()).as("outcome unknown, not forwarded again").isIn(409, 200);
        await(() -> reconciliations(gateway, "found") == 1);
        assertThat(send(gateway, key).getBody()).isEqualTo(found);
        assertThat(upstream.received("POST /merchants")).as("never sent again").isEqualTo(1);
    }

    static double events(ConfigurableApplicationContext gateway, String event) {
        return gateway.getBean(MeterRegistry.class).find("idempotency.events").tag("event", event).counters().stream()
                .mapToDouble(Counter::count).sum();
    }

    @Test
    void aLookupRefusedForCredentialsIsCountedAsSuchAndAskedAgain() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms");
        upstream.answer(request -> request.startsWith(BY_KEY) ? Answer.json(401, "{\"error\":\"unauthorized\"}")
                : Answer.NONE);
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).isEqualTo(504);
        await(() -> reconciliations(gateway, "credentials") >= 2);
        assertThat(reconciliations(gateway, "failed")).as("not mistaken for a backend that told nothing").isZero();
        assertThat(upstream.received("POST /merchants")).isEqualTo(1);
    }

    @Test
    void noLookupIsMadeBeforeReconcileAfter() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "1h");
        upstream.answer(request -> request.startsWith(BY_KEY) ? Answer.json(404, "{}") : Answer.NONE);
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).isEqualTo(504);
        Reconciler reconciler = gateway.getBean(Reconciler.class);
        long uncertainAt = reconciler.rounds();
        await(() -> reconciler.rounds() >= uncertainAt + 40);

        assertThat(upstream.received(BY_KEY)).as("40 rounds of looking for due lookups, none due").isZero();
        assertThat(gateway.getBean(MeterRegistry.class).find("idempotency.reconciliations").counters())
                .as("the route's counters are there from its start, at 0").hasSize(4)
                .allSatisfy(counter -> assertThat(counter.count()).isZero());
        assertThat(reconciler.lookups()).isZero();
        assertThat(send(gateway, key).getStatusCode().value()).as("still UNCERTAIN").isEqualTo(409);
    }

    @Test
    void aLookupAnswering500LeavesTheRecordUncertainAndIsAskedAgain() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms");
        AtomicInteger lookups = new AtomicInteger();
        String found = "{\"processId\":\"p-1\",\"status\":\"COMPLETED\"}";
        upstream.answer(request -> !request.startsWith(BY_KEY) ? Answer.NONE
                : lookups.incrementAndGet() <= 2 ? Answer.json(500, "{\"error\":\"busy\"}") : Answer.json(200, found));
        String key = UUID.randomUUID().toString();

        assertThat(send(gateway, key).getStatusCode().value()).isEqualTo(504);
        await(() -> reconciliations(gateway, "failed") >= 1);
        assertThat(send(gateway, key).getStatusCode().value()).as("still UNCERTAIN after a 500").isEqualTo(409);
        await(() -> reconciliations(gateway, "found") == 1);

        assertThat(reconciliations(gateway, "failed")).isEqualTo(2);
        assertThat(upstream.received(BY_KEY)).isEqualTo(3);
        assertThat(send(gateway, key).getBody()).isEqualTo(found);
        assertThat(upstream.received("POST /merchants")).isEqualTo(1);
    }

    @Test
    void aHostileBodyValueStaysInItsPathSegmentOfTheRoutesOwnUpstream() {
        gateway = gateway("/merchants/by-tax-id/{body:/taxId}", "300ms");
        upstream.answer(request -> request.startsWith("GET ") ? Answer.json(404, "{}") : Answer.NONE);
        String hostile = "../../admin?role=root#x http://evil.example/%2e%2e/ü";

        ResponseEntity<String> first = Gateways.client(gateway).post().uri("/merchants")
                .header("Idempotency-Key", UUID.randomUUID().toString()).header("Content-Type", "application/json")
                .bodyValue("{\"legalName\":\"ACME\",\"taxId\":\"" + hostile + "\"}")
                .exchangeToMono(r -> r.toEntity(String.class)).block(WAIT);
        assertThat(first.getStatusCode().value()).isEqualTo(504);
        await(() -> reconciliations(gateway, "not-found") == 1);

        assertThat(upstream.received()).containsExactly("POST /merchants", "GET /merchants/by-tax-id/"
                + "..%2F..%2Fadmin%3Frole%3Droot%23x%20http%3A%2F%2Fevil.example%2F%252e%252e%2F%C3%BC");
    }

    /**
     * A backend that looks writes up only by query parameter ({@code GET /payments?idempotency_key=..&tax=..}, as
     * many existing APIs do): anything else it is asked is a 400, which settles nothing. The query template's lookup
     * settles the record, its hostile body value one query value, decoded by the backend as it was sent.
     */
    @Test
    void anUncertainRequestIsSettledByALookupByQueryParameter() {
        gateway = gateway("/payments?idempotency_key={key}&tax={body:/taxId}", "300ms");
        String key = UUID.randomUUID().toString();
        String taxId = "DE 12&idempotency_key=x#frag/../ü+%";
        String found = "{\"paymentId\":\"pay-1\",\"status\":\"SETTLED\"}";
        upstream.answer(request -> {
            if (!request.startsWith("GET ")) {
                return Answer.NONE;
            }
            URI lookup = URI.create(request.substring("GET ".length()));
            return lookup.getRawPath().equals("/payments")
                    && queryParameters(lookup).equals(Map.of("idempotency_key", key, "tax", taxId))
                    ? Answer.json(200, found) : Answer.json(400, "{\"error\":\"lookups are by query parameter\"}");
        });

        String body = "{\"legalName\":\"ACME\",\"taxId\":\"" + taxId + "\"}";
        ResponseEntity<String> first = sending(gateway, key, body).block(WAIT);
        assertThat(first.getStatusCode().value()).as("outcome unknown").isEqualTo(504);
        await(() -> reconciliations(gateway, "found") == 1);

        assertThat(reconciliations(gateway, "failed")).as("the first lookup was the right one").isZero();
        assertThat(upstream.received()).containsExactly("POST /merchants", "GET /payments?idempotency_key=" + key
                + "&tax=DE%2012%26idempotency_key%3Dx%23frag%2F..%2F%C3%BC%2B%25");
        ResponseEntity<String> replay = sending(gateway, key, body).block(WAIT);
        assertThat(replay.getStatusCode().value()).isEqualTo(200);
        assertThat(replay.getHeaders().getFirst("Idempotency-Reconciled")).isEqualTo("true");
        assertThat(replay.getBody()).isEqualTo(found);
        assertThat(upstream.received("POST /merchants")).as("never sent again").isEqualTo(1);
    }

    /** The query's parameters as a backend reads them: split on '&' and the first '=', each part percent-decoded. */
    static Map<String, String> queryParameters(URI uri) {
        Map<String, String> parameters = new HashMap<>();
        for (String parameter : uri.getRawQuery() == null ? new String[0] : uri.getRawQuery().split("&")) {
            String[] nameAndValue = parameter.split("=", 2);
            parameters.merge(URLDecoder.decode(nameAndValue[0], StandardCharsets.UTF_8), nameAndValue.length < 2 ? ""
                    : URLDecoder.decode(nameAndValue[1], StandardCharsets.UTF_8), (one, other) -> "(sent twice)");
        }
        return parameters;
    }

    @Test
    void twoInstancesMakeExactlyOneLookupPerDueRecord() {
        gateway = gateway("/merchants/by-idempotency-key/{key}", "300ms");
        other = gateway("/merchants/by-idempotency-key/{key}", "300ms");
        // Each lookup takes several of the instances' rounds (50 ms): both see the record due while one asks.
        upstream.answer(request -> request.startsWith(BY_KEY)
                ? Answer.json(404, "{}").after(Duration.ofMillis(500)) : Answer.NONE);
        List<String> keys = Flux.range(0, 6).map(i -> UUID.randomUUID().toString()).collectList().block();

        Flux.fromIterable(keys).index()
                .flatMap(key -> sending(key.getT1() % 2 == 0 ? gateway : other, key.getT2()), 6)
                .collectList().block(WAIT);
        // Well within one claim lease (15 s) on a quiet machine: a slot whose claim reply was lost waited a lease.
        await(() -> reconciliations(gateway, "not-found") + reconciliations(other, "not-found") == keys.size());

        for (String key : keys) {
            assertThat(upstream.received().stream().filter((BY_KEY + key)::equals)).as("one lookup of " + key)
                    .hasSize(1);
        }
        assertThat(reconciliations(gateway, "failed") + reconciliations(other, "failed")).isZero();
    }

    static ResponseEntity<String> send(ConfigurableApplicationContext gateway, String key) {
        return sending(gateway, key).block(WAIT);
    }

    static Mono<ResponseEntity<String>> sending(ConfigurableApplicationContext gateway, String key) {
        return sending(gateway, key, "{\"legalName\":\"ACME\",\"taxId\":\"ACME1234\"}");
    }

    static Mono<ResponseEntity<String>> sending(ConfigurableApplicationContext gateway, String key, String body) {
        // Replays up to the default stored-response limit (1 MB), past this client's own 256 KB buffer.
        return Gateways.client(gateway).mutate().codecs(codecs -> codecs.defaultCodecs().maxInMemorySize(2 << 20))
                .build().post().uri("/merchants").header("Idempotency-Key", key)
                .header("Content-Type", "application/json").bodyValue(body)
                .exchangeToMono(r -> r.toEntity(String.class));
    }

    static double reconciliations(ConfigurableApplicationContext gateway, String outcome) {
        Counter counter = gateway.getBean(MeterRegistry.class).find("idempotency.reconciliations")
                .tags("route", "onboarding", "outcome", outcome).counter();
        return counter == null ? 0 : counter.count();
    }

    /** Polls the condition (bounded); never a sleep in its place. */
    static void await(BooleanSupplier condition) {
        await(condition, WAIT);
    }

    static void await(BooleanSupplier condition, Duration bound) {
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop().filter(t -> condition.getAsBoolean()).next()
                .block(bound);
    }
}
