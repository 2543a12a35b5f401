package dev.retrysafe.gateway.faults;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import dev.retrysafe.gateway.support.MisbehavingUpstream;
import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.RedisIdempotencyStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The moments when nobody knows what happened, on real sockets: upstreams that never answer or hang up, clients
 * that hang up, a Redis that restarts. After every fault: no second upstream call for one key, no lost stored
 * response, and the documented status for every client.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout=1500ms"})
class FaultToleranceIntegrationTest {
    static final WireMockServer wiremock = new WireMockServer(options().dynamicPort());
    static final MisbehavingUpstream misbehaving;

    static {
        wiremock.start();
        try {
            misbehaving = new MisbehavingUpstream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    EmbeddedRedisServer redisServer;
    @Autowired
    ReactiveRedisConnectionFactory redisConnections;
    @Autowired
    IdempotencyEvents events;

    WebTestClient client;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        route(registry, 0, "misbehaving", "http://127.0.0.1:" + misbehaving.port(),
                "/never/**,/close-before/**,/mid-body/**");
        route(registry, 1, "wm", "http://127.0.0.1:" + wiremock.port(), "/wm/**");
        // Slow machines: the 1.5 s global response timeout is for the misbehaving upstream only.
        registry.add("spring.cloud.gateway.server.webflux.routes[1].metadata.response-timeout", () -> 10000);
        route(registry, 2, "short-lease", "http://127.0.0.1:" + wiremock.port(), "/short-lease/**");
        registry.add(arg(2, "in-flight-lease"), () -> "300ms");
        registry.add(arg(2, "in-flight-wait"), () -> "8s");
        route(registry, 3, "honours-key", "http://127.0.0.1:" + wiremock.port(), "/honours/**");
        registry.add(arg(3, "upstream-honours-key"), () -> "true");
    }

    static void route(DynamicPropertyRegistry registry, int index, String id, String uri, String paths) {
        String prefix = "spring.cloud.gateway.server.webflux.routes[" + index + "].";
        registry.add(prefix + "id", () -> id);
        registry.add(prefix + "uri", () -> uri);
        registry.add(prefix + "predicates[0]", () -> "Path=" + paths);
        registry.add(prefix + "filters[0].name", () -> "Idempotency");
    }

    static String arg(int index, String name) {
        return "spring.cloud.gateway.server.webflux.routes[" + index + "].filters[0].args." + name;
    }

    @AfterAll
    static void stopUpstreams() throws IOException {
        wiremock.stop();
        misbehaving.close();
    }

    @BeforeEach
    void connect() {
        client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(30)).build();
        wiremock.resetAll();
    }

    /** Tests that restart Redis leave it running; wait (bounded) until the gateway's connection is back too. */
    @org.junit.jupiter.api.AfterEach
    void redisBack() {
        redisServer.start();
        Flux.interval(Duration.ofMillis(50)).onBackpressureDrop()
                .concatMap(t -> new ReactiveStringRedisTemplate(redisConnections).hasKey("ping")
                        .map(any -> true).onErrorResume(e -> Mono.just(false)))
                .filter(up -> up).next().block(Duration.ofSeconds(20));
    }

    static String newKey() {
        return UUID.randomUUID().toString();
    }

    String state(String routeId, String key) {
        return field(routeId, key, "state");
    }

    String field(String routeId, String key, String field) {
        return fieldLater(routeId, key, field).block(Duration.ofSeconds(5));
    }

    Mono<String> fieldLater(String routeId, String key, String field) {
        String recordKey = RedisKeyspace.recordKey(new IdempotencyScope("", routeId, new IdempotencyKey(key)));
        return new ReactiveStringRedisTemplate(redisConnections).<String, String>opsForHash().get(recordKey, field)
                .defaultIfEmpty("(none)").onErrorResume(e -> Mono.just("(redis unavailable)"));
    }

    /** Polls (bounded) until the record reaches the state. */
    void awaitState(String routeId, String key, String state) {
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop().concatMap(t -> fieldLater(routeId, key, "state"))
                .filter(state::equals).next().block(Duration.ofSeconds(20));
    }

    /** Polls WireMock's journal (bounded) until the upstream has received the request. */
    static void awaitUpstream(String path) {
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .map(t -> wiremock.countRequestsMatching(postRequestedFor(urlEqualTo(path)).build()).getCount())
                .filter(n -> n > 0).next().block(Duration.ofSeconds(10));
    }

    @Test
    void upstreamThatAcceptsAndNeverAnswersMakesTheOutcomeUncertain() {
        String key = newKey();
        client.post().uri("/never/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(504)
                .expectBody().jsonPath("$.status.message").value(String.class,
                        m -> assertThat(m).contains("outcome of the request is unknown").contains("same key"));
        assertThat(state("misbehaving", key)).isEqualTo("UNCERTAIN");
        assertThat(field("misbehaving", key, "uncertain_reason")).contains("response timeout");
        assertThat(field("misbehaving", key, "upstream")).isEqualTo("http://127.0.0.1:" + misbehaving.port());

        client.post().uri("/never/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(409)
                .expectHeader().valueEquals("Retry-After", "1")
                .expectBody().jsonPath("$.status.message").value(String.class,
                        m -> assertThat(m).contains("outcome of the original request with this idempotency key is unknown"));
        assertThat(misbehaving.requestsTo("/never/merchants")).isEqualTo(1);
    }

    @Test
    void upstreamThatHangsUpBeforeAnsweringMakesTheOutcomeUncertain() {
        String key = newKey();
        client.post().uri("/close-before/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(502)
                .expectBody().jsonPath("$.status.message").value(String.class,
                        m -> assertThat(m).contains("outcome of the request is unknown"));
        assertThat(state("misbehaving", key)).isEqualTo("UNCERTAIN");
        client.post().uri("/close-before/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(409);
        assertThat(misbehaving.requestsTo("/close-before/merchants")).isEqualTo(1);
    }

    @Test
    void upstreamThatHangsUpMidBodyMakesTheOutcomeUncertainAndTheClientSeesABrokenResponse() throws IOException {
        String key = newKey();
        String raw = rawPost("/mid-body/merchants", key, "x", false);
        // The client got the headers and part of the body, then the connection closed: never a short body that
        // looks complete.
        assertThat(raw).startsWith("HTTP/1.1 200");
        int bodyStart = raw.indexOf("\r\n\r\n") + 4;
        assertThat(raw.length() - bodyStart).isLessThan(1000);

        awaitState("misbehaving", key, "UNCERTAIN");
        assertThat(field("misbehaving", key, "uncertain_reason")).contains("broke off after 100 body bytes");
        client.post().uri("/mid-body/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(409);
        assertThat(misbehaving.requestsTo("/mid-body/merchants")).isEqualTo(1);
    }

    @Test
    void aClientThatHangsUpDoesNotCancelTheUpstreamAndItsRetryGetsTheReplay() throws IOException {
        String key = newKey();
        wiremock.stubFor(post(urlEqualTo("/wm/hangup")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withBody("{\"processId\":\"p-hangup\"}")
                .withFixedDelay(800)));

        rawPost("/wm/hangup", key, "{\"legalName\":\"ACME\"}", true);

        client.post().uri("/wm/hangup").header("Idempotency-Key", key).contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"legalName\":\"ACME\"}").exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo("{\"processId\":\"p-hangup\"}");
        wiremock.verify(exactly(1), postRequestedFor(urlEqualTo("/wm/hangup")));
    }

    @Test
    void aSlowButLiveRequestKeepsItsLeaseAndIsNeverTakenOver() {
        String key = newKey();
        // The lease is 300 ms, the upstream takes 1.2 s: only renewal keeps the record in flight.
        wiremock.stubFor(post(urlEqualTo("/short-lease/slow")).willReturn(aResponse().withStatus(202)
                .withBody("slow but fine").withFixedDelay(1200)));
        WebClientHolder.post(port, "/short-lease/slow", key).subscribe();
        awaitUpstream("/short-lease/slow");
        // Let the first lease (300 ms from the reservation, by Redis's clock) run out before asking again.
        long firstLeaseEnd = Long.parseLong(field("short-lease", key, "reserved_at")) + 300;
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop()
                .concatMap(t -> new ReactiveStringRedisTemplate(redisConnections)
                        .execute(c -> c.serverCommands().time()).next())
                .filter(now -> now > firstLeaseEnd + 150).next().block(Duration.ofSeconds(5));

        // Waits (in-flight-wait 8 s) through several lease periods, then gets the result.
        client.post().uri("/short-lease/slow").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk()
                .expectBody(String.class).isEqualTo("slow but fine");
        wiremock.verify(exactly(1), postRequestedFor(urlEqualTo("/short-lease/slow")));
    }

    @Test
    void anUncertainRequestIsSentAgainWithTheSameKeyOnlyWhenTheUpstreamHonoursIt() {
        String key = newKey();
        wiremock.stubFor(post(urlEqualTo("/honours/merchants")).inScenario("h").whenScenarioStateIs("Started")
                .willReturn(aResponse().withStatus(202).withBody("late").withFixedDelay(3000))
                .willSetStateTo("second"));
        wiremock.stubFor(post(urlEqualTo("/honours/merchants")).inScenario("h").whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(202).withBody("deduplicated by the upstream")));

        client.post().uri("/honours/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(504);
        client.post().uri("/honours/merchants").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(202)
                .expectBody(String.class).isEqualTo("deduplicated by the upstream");
        wiremock.verify(exactly(2), postRequestedFor(urlEqualTo("/honours/merchants"))
                .withHeader("Idempotency-Key", equalTo(key)));
        assertThat(field("honours-key", key, "attempts")).isEqualTo("2");
    }

    @Test
    void redisDownIs503AndTheGatewayRecoversByItselfWhenRedisIsBack() {
        wiremock.stubFor(post(urlEqualTo("/wm/recover")).willReturn(aResponse().withStatus(202).withBody("ok")));
        redisServer.stop();
        try {
            client.post().uri("/wm/recover").header("Idempotency-Key", newKey()).bodyValue("x").exchange()
                    .expectStatus().isEqualTo(503)
                    .expectHeader().exists("Retry-After");
            wiremock.verify(exactly(0), postRequestedFor(urlEqualTo("/wm/recover")));
        } finally {
            redisServer.start();
        }
        // No restart of the gateway: a fresh request succeeds within seconds (bounded poll).
        Integer recovered = Flux.interval(Duration.ofMillis(200)).onBackpressureDrop()
                .concatMap(t -> WebClientHolder.post(port, "/wm/recover", newKey()))
                .filter(status -> status != 503).next().block(Duration.ofSeconds(20));
        assertThat(recovered).isEqualTo(202);
    }

    @Test
    void redisRestartingBetweenReservationAndStoreDoesNotLoseTheResponse() {
        String key = newKey();
        wiremock.stubFor(post(urlEqualTo("/wm/restart")).willReturn(aResponse().withStatus(202)
                .withBody("survived").withFixedDelay(1200)));
        double restoredBefore = events.count("store-restored");
        WebClientHolder.post(port, "/wm/restart", key).subscribe();
        awaitUpstream("/wm/restart");

        // Redis restarts empty while the upstream works.
        redisServer.stop();
        redisServer.start();

        awaitState("wm", key, "COMPLETED");
        client.post().uri("/wm/restart").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk()
                .expectBody(String.class).isEqualTo("survived");
        wiremock.verify(exactly(1), postRequestedFor(urlEqualTo("/wm/restart")));
        assertThat(events.count("store-restored")).isGreaterThan(restoredBefore);
    }

    @Test
    void aStoreRefusedWhileRedisIsDownIsStoredOnceItIsBackAndTheClientGetsTheUpstreamsAnswerMeanwhile() {
        // Redis down (stopped; it comes back empty): the result is written anew once it is back.
        aStoreThatCannotRunYetIsStoredOnceRedisAnswers("/wm/lost", redisServer::stop, redisServer::start,
                Duration.ZERO);
    }

    /**
     * Redis up but not running writes (CLIENT PAUSE WRITE: every store attempt times out, then runs once Redis
     * resumes), for longer than the few seconds of retries the store once had before giving up: the fault's length
     * is the scenario here, not a wait for something to happen. The client still gets the upstream's answer at once,
     * and the record is stored once Redis resumes.
     */
    @Test
    void aStoreThatTimesOutWhileRedisIsPausedIsStoredOnceItResumes() {
        aStoreThatCannotRunYetIsStoredOnceRedisAnswers("/wm/slow-store",
                () -> redisCommand("CLIENT", "PAUSE", "30000", "WRITE"), () -> redisCommand("CLIENT", "UNPAUSE"),
                Duration.ofSeconds(12));
    }

    /**
     * The upstream acted: its client hears so within the settle deadline, though the gateway cannot keep the answer
     * yet; the store call goes on until Redis answers (it was once given up after a few seconds, and the record then
     * lied: IN_FLIGHT, then "outcome unknown" for a result the client had), so the retry after the repair replays.
     */
    private void aStoreThatCannotRunYetIsStoredOnceRedisAnswers(String path, Runnable fault, Runnable repair,
            Duration faultLasts) {
        wiremock.stubFor(post(urlEqualTo(path)).willReturn(aResponse().withStatus(202)
                .withBody("answered while Redis was away").withFixedDelay(300)));
        String key = newKey();
        double lostBefore = events.count("store-lost");
        Mono<Integer> answer = WebClientHolder.post(port, path, key).cache();
        answer.subscribe();
        awaitUpstream(path);
        fault.run();
        try {
            assertThat(answer.block(Duration.ofSeconds(30))).as("the client's answer, Redis still away")
                    .isEqualTo(202);
            Mono.delay(faultLasts).block();
        } finally {
            repair.run();
        }
        awaitState("wm", key, "COMPLETED");
        client.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk()
                .expectBody(String.class).isEqualTo("answered while Redis was away");
        wiremock.verify(exactly(1), postRequestedFor(urlEqualTo(path)));
        assertThat(events.count("store-lost")).as("nothing given up").isEqualTo(lostBefore);
    }

    /** One command to the test's Redis on a connection of its own (RESP, reply read and ignored). */
    private void redisCommand(String... args) {
        StringBuilder command = new StringBuilder("*" + args.length + "\r\n");
        for (String arg : args) {
            command.append('$').append(arg.length()).append("\r\n").append(arg).append("\r\n");
        }
        try (Socket socket = new Socket("127.0.0.1", redisServer.port())) {
            socket.setSoTimeout(5_000);
            socket.getOutputStream().write(command.toString().getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            socket.getInputStream().read(new byte[64]);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * One request on a raw socket. With {@code hangUpEarly}, closes the socket as soon as the upstream has the
     * request, before any response; otherwise reads until the server closes the connection.
     */
    private String rawPost(String path, String key, String body, boolean hangUpEarly) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(15_000);
            String request = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: " + key
                    + "\r\nContent-Type: application/json\r\nContent-Length: " + bytes.length + "\r\n\r\n";
            socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
            if (hangUpEarly) {
                awaitUpstream(path);
                return "";
            }
            return new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        }
    }

    /** A non-blocking request for polling loops; emits the status, 0 when the request fails. */
    static final class WebClientHolder {
        static Mono<Integer> post(int port, String path, String key) {
            return WebClient.create("http://127.0.0.1:" + port).post().uri(path).header("Idempotency-Key", key)
                    .bodyValue("x").exchangeToMono(r -> r.releaseBody().thenReturn(r.statusCode().value()))
                    .onErrorResume(e -> Mono.just(0));
        }
    }
}
