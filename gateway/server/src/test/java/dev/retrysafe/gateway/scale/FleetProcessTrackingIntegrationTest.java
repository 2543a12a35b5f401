package dev.retrysafe.gateway.scale;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.idempotency.store.redis.RedisKeyspace;
import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.idempotency.store.redis.RedisProcessQueue;
import dev.retrysafe.gateway.support.GatewayProcess;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.LocalRedisServer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Issue 14: the process a 202 started is the fleet's, not the instance's. Gateway A (a JVM of its own) stores the
 * 202 and is killed with SIGKILL while the process still runs; gateway B, which never saw the request, sees the
 * process end by polling within {@code process-poll.max-delay} (plus {@code process-poll.restore-interval} when the
 * queue's directory lost the process's slot), the replay loses {@code Retry-After}, and the key
 * is kept for the retention from that end. On one Redis and on a three-master Redis Cluster.
 */
class FleetProcessTrackingIntegrationTest {
    static final Duration MAX_DELAY = Duration.ofSeconds(1);
    static final Duration RESTORE_INTERVAL = Duration.ofSeconds(1);
    static final Duration RETENTION = Duration.ofHours(1);
    /** The end must be seen within the longest poll delay; the rest is this machine's scheduling and one tick. */
    static final Duration SLACK = Duration.ofMillis(1_500);

    WireMockServer upstream;
    String processId;

    @BeforeEach
    void upstream() {
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        processId = "p-" + UUID.randomUUID();
        upstream.stubFor(post(urlEqualTo("/merchants")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withHeader("Location", "/processes/" + processId)
                .withHeader("Retry-After", "3").withBody("{\"processId\":\"" + processId + "\"}")));
        status("PENDING");
    }

    @AfterEach
    void stopUpstream() {
        upstream.stop();
    }

    @Test
    void onOneRedis() throws Exception {
        assumeTrue(LocalRedisCluster.onPath("redis-server"), "SKIPPED: redis-server is not on the PATH");
        try (LocalRedisServer redis = new LocalRedisServer("--port")) {
            Map<String, String> settings = new HashMap<>();
            settings.put("spring.data.redis.host", "127.0.0.1");
            settings.put("spring.data.redis.port", Integer.toString(redis.port()));
            aKilledInstancesProcessIsSeenEndingByAnother(settings, List.of(redis.port()), false);
        }
    }

    /**
     * And the queue's directory loses what it said about the process's slot, as when its master fails over before
     * replicating it (seen in the rolling-restart soak with a master killed): B puts it back from the slots.
     */
    @Test
    void onAThreeMasterClusterWhoseDirectoryLostTheProcesssSlot() throws Exception {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Redis Cluster can be started");
        try (LocalRedisCluster cluster = new LocalRedisCluster(3)) {
            aKilledInstancesProcessIsSeenEndingByAnother(
                    new HashMap<>(Map.of("spring.data.redis.cluster.nodes", cluster.nodes())), cluster.ports(), true);
        }
    }

    private void aKilledInstancesProcessIsSeenEndingByAnother(Map<String, String> redis, List<Integer> redisPorts,
            boolean directoryLost) throws Exception {
        Map<String, String> settings = new HashMap<>(redis);
        String filter = "spring.cloud.gateway.server.webflux.routes[0].filters[0].args.";
        settings.put(filter + "process-status-uri", "/processes/{processId}");
        settings.put(filter + "retention", RETENTION.toString());
        settings.put("idempotency.process-poll.initial-delay", "200ms");
        settings.put("idempotency.process-poll.max-delay", MAX_DELAY.toMillis() + "ms");
        settings.put("idempotency.process-poll.restore-interval", RESTORE_INTERVAL.toMillis() + "ms");
        settings.put("idempotency.record-counts.enabled", "false");
        String upstreamUri = "http://127.0.0.1:" + upstream.port();
        ConfigurableApplicationContext b = Gateways.start(upstreamUri, settings);
        Map<String, String> aSettings = new HashMap<>(settings);
        aSettings.put("spring.cloud.gateway.server.webflux.routes[0].id", "onboarding");
        aSettings.put("spring.cloud.gateway.server.webflux.routes[0].uri", upstreamUri);
        aSettings.put("spring.cloud.gateway.server.webflux.routes[0].predicates[0]", "Path=/merchants/**");
        aSettings.put("spring.cloud.gateway.server.webflux.routes[0].filters[0].name", "Idempotency");
        String key = UUID.randomUUID().toString();
        try (GatewayProcess a = GatewayProcess.start("fleet-gateway-a", aSettings)) {
            ResponseEntity<String> first = send(a.baseUrl(), key);
            assertThat(first.getStatusCode().value()).isEqualTo(202);
            // The fleet polls the process (A or B, whoever claims it first), and it is still running.
            awaitStatusReads(1);

            assertThat(a.kill()).as("killed by SIGKILL").isEqualTo(137);
            String record = recordKey(redisPorts);
            String scopeHash = record.substring("idempotency:{".length(), record.length() - 1);
            long claimedUntil = claimedUntil(redisPorts, scopeHash);
            if (directoryLost) {
                cli(redisPorts, "del", RedisKeyspace.PROCESSES.directory());
            }
            status("COMPLETED");
            long ended = System.currentTimeMillis();

            // B never saw the request; nobody reads the status through a gateway.
            String baseB = "http://127.0.0.1:" + b.getEnvironment().getRequiredProperty("local.server.port");
            ResponseEntity<String> replay = Flux.interval(Duration.ZERO, Duration.ofMillis(50)).onBackpressureDrop()
                    .concatMap(t -> sending(baseB, key))
                    .filter(r -> !r.getHeaders().containsHeader("Retry-After"))
                    .next().block(Duration.ofSeconds(60));
            long seen = System.currentTimeMillis();

            assertThat(replay.getStatusCode().value()).isEqualTo(200);
            assertThat(replay.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
            // A poll A had claimed when it died is the fleet's again once the claim lapses; otherwise the next poll
            // comes within the longest delay.
            long from = Math.max(ended, claimedUntil);
            // A lost directory entry is put back at the fleet's next restore, one restore interval later at most.
            Duration bound = (directoryLost ? MAX_DELAY.plus(RESTORE_INTERVAL) : MAX_DELAY).plus(SLACK);
            assertThat(seen - from).as("the end seen within %s of the status saying so, or of A's lapsed claim",
                    bound).isLessThanOrEqualTo(bound.toMillis());
            long ttl = Long.parseLong(cli(redisPorts, "pttl", "idempotency:{" + scopeHash + "}"));
            assertThat(ttl).as("kept for the retention from the end, no longer the 7-day cap")
                    .isBetween(RETENTION.minusMinutes(1).toMillis(), RETENTION.toMillis());
            upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants")));
        } finally {
            b.close();
        }
    }

    private void status(String status) {
        upstream.stubFor(get(urlEqualTo("/processes/" + processId)).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json")
                .withBody("{\"processId\":\"" + processId + "\",\"status\":\"" + status + "\"}")));
    }

    private void awaitStatusReads(int atLeast) {
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop()
                .filter(t -> upstream.countRequestsMatching(getRequestedFor(urlEqualTo("/processes/" + processId))
                        .build()).getCount() >= atLeast)
                .next().block(Duration.ofSeconds(30));
    }

    private static ResponseEntity<String> send(String baseUrl, String key) {
        return sending(baseUrl, key).block(Duration.ofSeconds(20));
    }

    private static Mono<ResponseEntity<String>> sending(String baseUrl, String key) {
        return WebClient.create(baseUrl).post().uri("/merchants")
                .header("Idempotency-Key", key).header("Content-Type", "application/json")
                .bodyValue("{\"legalName\":\"ACME\"}")
                .exchangeToMono(r -> r.toEntity(String.class));
    }

    /** The one record this test wrote, found on whichever node holds it. */
    private static String recordKey(List<Integer> ports) throws Exception {
        for (int port : ports) {
            Optional<String> key = LocalRedisCluster.cli(port, "--scan", "--pattern", "idempotency:{*").lines()
                    .filter(line -> line.startsWith("idempotency:{")).findFirst();
            if (key.isPresent()) {
                return key.get();
            }
        }
        throw new IllegalStateException("no record in Redis");
    }

    /** When the claim on the process's next poll ends, if one was held when A died (else 0). */
    private static long claimedUntil(List<Integer> ports, String scopeHash) throws Exception {
        String score = cli(ports, "zscore", RedisKeyspace.PROCESSES.queueKey(scopeHash), scopeHash);
        long now = Long.parseLong(cli(ports, "time").lines().findFirst().orElseThrow()) * 1000;
        long at = score.isBlank() ? 0 : (long) Double.parseDouble(score);
        // A due time further away than the longest delay can only be a claim.
        return at > now + MAX_DELAY.toMillis() + 1_000 ? System.currentTimeMillis() + (at - now) : 0;
    }

    /** A command on the node that owns its key (the first node that does not answer MOVED). */
    private static String cli(List<Integer> ports, String... command) throws Exception {
        for (int port : ports) {
            String reply = LocalRedisCluster.cli(port, command);
            if (!reply.startsWith("MOVED") && !reply.contains("ERR")) {
                return reply;
            }
        }
        throw new IllegalStateException("no node answered " + String.join(" ", command));
    }
}
