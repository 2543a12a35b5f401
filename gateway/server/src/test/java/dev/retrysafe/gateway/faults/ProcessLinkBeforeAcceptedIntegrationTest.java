package dev.retrysafe.gateway.faults;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.core.Options.ChunkedEncodingPolicy;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.redis.LuaScripts;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LateRedisReplies;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.http.ResponseEntity;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;

/**
 * A status read made as soon as a tracked 202 arrived, which shows the process COMPLETED, ends the record for the
 * very next replay: the process is linked to its record before the client can read its status. Redis's answer to
 * the record's store step is held back on the wire ({@link LateRedisReplies}) until the gateway retries it. On one
 * Redis the link is written by that very step, ahead of any later command on the connection; were it a call of its
 * own after the step's answer (as it still is on a Cluster, and once was everywhere), only holding the 202 until the
 * link is stored would keep this read from reaching Redis first. That hold itself is
 * {@code IdempotencyGatewayFilterTest.aTrackedAnswerReachesTheClientOnlyOnceItsRecordAndProcessLinkAreStored}.
 */
class ProcessLinkBeforeAcceptedIntegrationTest {
    /** Sent by the test's own status reads only: the gateway's poller keeps seeing PENDING and ends nothing. */
    static final String READER = "X-Status-Reader";
    static final String ACCEPTED = "{\"processId\":\"p-late-link\",\"status\":\"PENDING\"}";

    static EmbeddedRedisServer redis;
    static LateRedisReplies wire;
    static WireMockServer upstream;
    static ConfigurableApplicationContext gateway;
    static LettuceConnectionFactory direct;
    static ReactiveStringRedisTemplate records;

    @BeforeAll
    static void start() throws IOException {
        redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        wire = new LateRedisReplies(redis.port());
        // WireMock answers chunked unless told not to: the gateway would then pass on a chunked 202, whose end the
        // client sees only once the gateway has settled, hiding the race this test is about.
        upstream = new WireMockServer(options().dynamicPort().useChunkedTransferEncoding(ChunkedEncodingPolicy.NEVER));
        upstream.start();
        String filter = "spring.cloud.gateway.server.webflux.routes[0].filters[0].args.";
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", Integer.toString(wire.port()),
                // Generous: the held answer is released by the retry after one store timeout, well within the two
                // store timeouts a tracked answer may be held.
                "idempotency.store-timeout", "3s",
                "idempotency.process-poll.initial-delay", "1h",
                filter + "process-status-uri", "/merchants/processes/{processId}"));
        // The test's own look at Redis goes around the late wire.
        direct = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redis.port()));
        direct.afterPropertiesSet();
        direct.start();
        records = new ReactiveStringRedisTemplate(direct);
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(gateway, upstream == null ? null : upstream::stop, wire,
                direct == null ? null : direct::destroy, redis == null ? null : redis::stop);
    }

    @Test
    void aStatusReadMadeAsSoonAsTheAcceptedArrivedEndsTheRecordForTheNextReplay() {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo("/merchants/late-link")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withHeader("Retry-After", "1")
                .withHeader("Content-Length", Integer.toString(ACCEPTED.length())).withBody(ACCEPTED)));
        upstream.stubFor(get(urlEqualTo("/merchants/processes/p-late-link")).atPriority(2).willReturn(aResponse()
                .withStatus(200).withHeader("Content-Type", "application/json")
                .withBody("{\"processId\":\"p-late-link\",\"status\":\"PENDING\"}")));
        upstream.stubFor(get(urlEqualTo("/merchants/processes/p-late-link")).atPriority(1)
                .withHeader(READER, equalTo("client")).willReturn(aResponse().withStatus(200)
                        .withHeader("Content-Type", "application/json")
                        .withBody("{\"processId\":\"p-late-link\",\"status\":\"COMPLETED\"}")));
        // The upstream sends a Content-Length, as most do: a client told one knows it has the whole 202 at its last
        // byte, without waiting for a chunked body's end.
        String scopeHash = scope(key).hash();
        wire.holdRepliesAfter(loadedSha("idempotency_complete.lua"), scopeHash);

        ResponseEntity<String> accepted = send(key);
        assertThat(accepted.getStatusCode().value()).isEqualTo(202);
        ResponseEntity<String> status = onItsOwnConnection().get().uri("/merchants/processes/p-late-link")
                .header(READER, "client").exchangeToMono(r -> r.toEntity(String.class))
                .block(Duration.ofSeconds(30));
        assertThat(status.getBody()).contains("\"status\":\"COMPLETED\"");

        ResponseEntity<String> replay = send(key);
        assertThat(replay.getStatusCode().value()).isEqualTo(200);
        assertThat(replay.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(replay.getHeaders().getFirst("Retry-After")).as("the process's end is recorded").isNull();
        assertThat(wire.matches()).as("the record's write was answered late, after its retry").isEqualTo(2);
    }

    /**
     * The status read comes on a connection of its own, as from another client or another connection of a pool: on
     * the 202's keep-alive connection the gateway would take it only once the 202's exchange had ended (HTTP/1.1
     * answers in order), after the link whether the 202 was held or not, hiding the race this test is about.
     */
    static WebClient onItsOwnConnection() {
        return WebClient.builder()
                .baseUrl("http://127.0.0.1:" + gateway.getEnvironment().getRequiredProperty("local.server.port"))
                .clientConnector(new ReactorClientHttpConnector(HttpClient.create(ConnectionProvider.newConnection())))
                .build();
    }

    /** Loaded first, so that the gateway's call is one EVALSHA (no NOSCRIPT round trip) carrying the SHA. */
    static String loadedSha(String script) {
        String text = LuaScripts.source(script);
        return records.execute(c -> c.scriptingCommands()
                .scriptLoad(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)))).next().block();
    }

    static IdempotencyScope scope(String key) {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(key));
    }

    static ResponseEntity<String> send(String key) {
        return Gateways.client(gateway).post().uri("/merchants/late-link").header("Idempotency-Key", key)
                .bodyValue("x").exchangeToMono(r -> r.toEntity(String.class)).block(Duration.ofSeconds(30));
    }
}
