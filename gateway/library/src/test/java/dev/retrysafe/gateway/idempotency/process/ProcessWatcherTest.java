package dev.retrysafe.gateway.idempotency.process;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.support.InMemoryIdempotencyStore;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.web.reactive.function.client.WebClient;

/** Polling of a pending process, and its end when the application closes. */
class ProcessWatcherTest {
    final ProcessTracking tracking = new ProcessTracking("/processes/{processId}", "/processId", "/status",
            Set.of("COMPLETED", "FAILED"), Duration.ofDays(7));
    final IdempotencyScope scope = new IdempotencyScope("t", "r", new IdempotencyKey("a-key-long-enough-1"));
    final AtomicInteger statusReads = new AtomicInteger();
    final CountDownLatch firstRead = new CountDownLatch(1);
    HttpServer status;

    @BeforeEach
    void pendingProcessStatus() throws IOException {
        status = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        status.createContext("/processes/", exchange -> {
            statusReads.incrementAndGet();
            byte[] body = "{\"status\":\"PENDING\"}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
            firstRead.countDown();
        });
        status.start();
    }

    @AfterEach
    void stop() {
        status.stop(0);
    }

    @Test
    void theApplicationClosingStopsEveryPollBeforeTheStoreGoesAway() throws Exception {
        ProcessWatcher watcher = new ProcessWatcher(new InMemoryIdempotencyStore(), WebClient.create(),
                Duration.ofMillis(5), Duration.ofMillis(20));
        GenericApplicationContext context = new GenericApplicationContext();
        watcher.setApplicationContext(context);
        watcher.watch(scope, "p-1", tracking, upstream(), Duration.ofHours(24)).block();
        assertThat(firstRead.await(10, TimeUnit.SECONDS)).as("the status resource is polled").isTrue();
        assertThat(watcher.polling()).isEqualTo(1);

        watcher.onApplicationEvent(new ContextClosedEvent(context));

        assertThat(watcher.polling()).isZero();
        watcher.watch(scope, "p-2", tracking, upstream(), Duration.ofHours(24)).block();
        assertThat(watcher.polling()).as("nothing new is polled while closing").isZero();
    }

    @Test
    void aChildContextClosingStopsNothing() throws Exception {
        ProcessWatcher watcher = new ProcessWatcher(new InMemoryIdempotencyStore(), WebClient.create(),
                Duration.ofMillis(5), Duration.ofMillis(20));
        GenericApplicationContext context = new GenericApplicationContext();
        GenericApplicationContext child = new GenericApplicationContext(context);
        watcher.setApplicationContext(context);
        watcher.watch(scope, "p-1", tracking, upstream(), Duration.ofHours(24)).block();

        watcher.onApplicationEvent(new ContextClosedEvent(child));

        assertThat(watcher.polling()).isEqualTo(1);
        watcher.destroy();
    }

    private String upstream() {
        return "http://127.0.0.1:" + status.getAddress().getPort();
    }
}
