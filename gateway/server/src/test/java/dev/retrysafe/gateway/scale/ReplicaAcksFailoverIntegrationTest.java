package dev.retrysafe.gateway.scale;

import dev.retrysafe.gateway.support.AcceptingUpstream;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisSentinel;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.FreezableLink;
import dev.retrysafe.gateway.support.RespProbe;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Mono;

/**
 * What a Sentinel failover can lose, and what {@code idempotency.replica-acks} (Redis {@code WAIT}) saves. Redis
 * replicates asynchronously: a record the master acknowledged may not be on the replica Sentinel promotes. The
 * replicas here replicate through a {@link FreezableLink}, so "written on the master, on no replica" is held on
 * purpose, then the master is SIGKILLed. Needs {@code redis-server} and {@code redis-cli} on the PATH.
 */
class ReplicaAcksFailoverIntegrationTest {
    /** Answers 202 to every request, counted by key on arrival; a test can hold its answers. */
    static final AcceptingUpstream upstream = new AcceptingUpstream();
    LocalRedisSentinel redis;
    ConfigurableApplicationContext gateway;
    Runnable releaseAnswers = () -> { };

    @BeforeAll
    static void needsRedis() {
        assumeTrue(LocalRedisCluster.available(),
                "SKIPPED: redis-server and redis-cli are not on the PATH, so no local Sentinel setup can be started");
    }

    @AfterEach
    void stop() throws Exception {
        releaseAnswers.run();
        Gateways.closeAll(gateway, redis);
    }

    void start(int replicaAcks) throws Exception {
        redis = LocalRedisSentinel.withFreezableReplication(2);
        Map<String, String> properties = new HashMap<>(Map.of(
                "spring.data.redis.sentinel.master", LocalRedisSentinel.MASTER_NAME,
                "spring.data.redis.sentinel.nodes", redis.sentinelNodes(),
                "spring.data.redis.timeout", "1s",
                "idempotency.in-flight-lease", "1s",
                "idempotency.in-flight-wait", "0s"));
        properties.put("idempotency.replica-acks", Integer.toString(replicaAcks));
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), properties);
    }

    @Test
    void withoutReplicaAcksAFailoverCanForgetAnAcknowledgedRecordAndTheRetryRunsTwice() throws Exception {
        start(0);
        String key = UUID.randomUUID().toString();
        redis.freezeReplication();
        assertThat(send(key).getStatusCode().value()).isEqualTo(202);

        failOver();

        ResponseEntity<String> retry = send(key);
        assertThat(retry.getStatusCode().value()).as("the promoted replica never had the record").isEqualTo(202);
        assertThat(retry.getHeaders().containsHeader("Idempotency-Replayed")).isFalse();
        assertThat(upstreamCalls(key)).as("the hazard replica-acks exists for: the upstream ran twice").isEqualTo(2);
    }

    @Test
    void withReplicaAcksAReservationNoReplicaHasIsUndoneAndRefusedSoTheRetryRunsOnce() throws Exception {
        start(1);
        String key = UUID.randomUUID().toString();
        assertThat(send(UUID.randomUUID().toString()).getStatusCode().value())
                .as("acknowledged while replication flows").isEqualTo(202);
        redis.freezeReplication();

        ResponseEntity<String> refused = send(key);
        assertThat(refused.getStatusCode().value()).isEqualTo(503);
        assertThat(refused.getHeaders().getFirst("Retry-After")).isNotNull();
        assertThat(upstreamCalls(key)).as("not forwarded without a replica holding the reservation").isZero();

        failOver();

        assertThat(send(key).getStatusCode().value()).isEqualTo(202);
        assertThat(upstreamCalls(key)).isEqualTo(1);
    }

    @Test
    void withReplicaAcksALostResultComesBackUncertainNeverAsASecondRun() throws Exception {
        start(1);
        String key = UUID.randomUUID().toString();
        releaseAnswers = upstream.holdAnswers();
        CompletableFuture<ResponseEntity<String>> first = sendAsync(key);
        // Forwarded means a replica acknowledged the reservation (WAIT returned): freezing before that point could
        // hold back the master's GETACK after the reservation itself reached the replicas, and the reservation
        // would be refused instead of the result being left unreplicated.
        awaitCondition("the request reached the upstream", () -> upstream.received(key) == 1);
        awaitCondition("the reservation reached every replica", this::reservedOnReplicas);
        // The reservation is on the replicas; the result the upstream is about to give will not be.
        redis.freezeReplication();
        releaseAnswers.run();
        assertThat(first.get().getStatusCode().value()).as("the client still gets the upstream's answer")
                .isEqualTo(202);
        IdempotencyEvents events = gateway.getBean(IdempotencyEvents.class);
        awaitCondition("the unreplicated result is counted", () -> events.count("replica-ack-missing") >= 1);
        assertThat(events.count("replica-ack-missing")).as("the unreplicated result is counted and logged")
                .isEqualTo(1);

        failOver();

        ResponseEntity<String> retry = send(key);
        assertThat(retry.getStatusCode().value()).isEqualTo(409);
        assertThat(retry.getBody()).contains("outcome of the original request with this idempotency key is unknown");
        assertThat(upstreamCalls(key)).as("an unknown outcome is never a licence to resend").isEqualTo(1);
    }

    /** SIGKILLs the master, then waits until Sentinel has promoted a replica and the gateway accepts writes. */
    private void failOver() throws Exception {
        redis.killMaster();
        FailoverProbe probe = FailoverProbe.run(() -> "probe-" + UUID.randomUUID(),
                key -> send(key).getStatusCode().value(), 1, Duration.ofSeconds(60));
        assertThat(probe.consecutiveOk).as("failed over: %s", probe.statuses).isEqualTo(1);
    }

    /** Waits, bounded, until {@code condition} holds; the bound only ends a test that would otherwise hang. */
    private static void awaitCondition(String what, Condition condition) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.holds()) {
            assertThat(System.nanoTime()).as(what).isLessThan(deadline);
            RespProbe.pollAgain();
        }
    }

    @FunctionalInterface
    private interface Condition {
        boolean holds() throws Exception;
    }

    private boolean reservedOnReplicas() throws Exception {
        for (int port : redis.replicaPorts()) {
            if (!(RespProbe.call(port, "KEYS", "idempotency:{*") instanceof List<?> keys) || keys.isEmpty()) {
                return false;
            }
        }
        return true;
    }

    private ResponseEntity<String> send(String key) {
        return sendAsync(key).join();
    }

    private CompletableFuture<ResponseEntity<String>> sendAsync(String key) {
        return Gateways.client(gateway).post().uri("/merchants/" + key).header("Idempotency-Key", key).bodyValue("x")
                .retrieve().onStatus(status -> true, response -> Mono.empty())
                .toEntity(String.class).timeout(Duration.ofSeconds(30)).toFuture();
    }

    private static int upstreamCalls(String key) {
        return upstream.received(key);
    }
}
