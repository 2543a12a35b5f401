package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.RedisSystemException;

/** Which failed store calls never left the instance, so that a given-up reserve is undone only when it may have run. */
class RefusedBeforeSendingTest {

    @Test
    void lettuceRejectingCommandsWhileDisconnectedSentNothing() {
        // Lettuce's own messages (DefaultEndpoint), as Spring Data wraps them.
        assertThat(RedisIdempotencyStore.refusedBeforeSending(new RedisSystemException("Redis exception",
                new RedisException("Currently not connected. Commands are rejected.")))).isTrue();
        assertThat(RedisIdempotencyStore.refusedBeforeSending(new RedisException("Connection is closed"))).isTrue();
    }

    @Test
    void aConnectionNotOpenYetSentNothing() {
        assertThat(RedisIdempotencyStore.refusedBeforeSending(
                new PreopenedConnections.NotOpenYet("not open yet"))).isTrue();
    }

    @Test
    void aTimeoutOrABrokenConnectionMayHaveRun() {
        assertThat(RedisIdempotencyStore.refusedBeforeSending(new RedisCommandTimeoutException("timed out")))
                .isFalse();
        assertThat(RedisIdempotencyStore.refusedBeforeSending(new RedisSystemException("Redis exception",
                new RedisException("Connection closed")))).isFalse();
        assertThat(RedisIdempotencyStore.refusedBeforeSending(new java.util.concurrent.TimeoutException()))
                .isFalse();
    }
}
