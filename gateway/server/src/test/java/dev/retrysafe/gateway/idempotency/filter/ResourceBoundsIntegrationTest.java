package dev.retrysafe.gateway.idempotency.filter;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.support.TestRoutes;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.buffer.PooledByteBufAllocator;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.context.TestPropertySource;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;

/**
 * Memory and threads stay bounded: a 100 MB response streams through without being held, and a thousand requests
 * waiting on one in-flight key hold no thread each and spin no loop.
 */
// A thousand reservations arrive within milliseconds; on a slow, shared machine the last ones took longer than the
// default store-timeout (1 s) and were refused with 503 instead of waiting, which is not what this class measures.
@TestPropertySource(properties = "idempotency.store-timeout=10s")
class ResourceBoundsIntegrationTest extends GatewayFilterTestBase {
    static final long HUNDRED_MB = 100L * 1024 * 1024;
    /** Answers its one request only when the test says so: the waiters are measured while it holds it. */
    static final HeldUpstream held = new HeldUpstream();

    @DynamicPropertySource
    static void heldRoute(DynamicPropertyRegistry registry) {
        // The next index after GatewayFilterTestBase's routes: Spring binds the list only without gaps.
        TestRoutes.route(registry, 17, "held-wait", held.uri(), "/held-wait/**", Map.of("in-flight-wait", "120s"));
        // The context's response timeout (5 s) would end the held exchange as uncertain before the test releases it.
        registry.add("spring.cloud.gateway.server.webflux.routes[17].metadata.response-timeout", () -> "120000");
    }

    @Autowired
    SettleSignals signals;
    @Autowired
    MeterRegistry meters;

    @Test
    void aHundredMegabyteResponseStreamsThroughWithoutBeingHeld() throws Exception {
        long heapBefore = usedHeapAfterGc();
        long directBefore = PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory();
        long writtenBefore = largeBody.written();
        try (Socket client = new Socket("127.0.0.1", port)) {
            client.getOutputStream().write(("POST /large/export HTTP/1.1\r\nHost: localhost\r\n"
                    + "Idempotency-Key: " + newKey() + "\r\nContent-Length: 1\r\n\r\nx")
                    .getBytes(StandardCharsets.US_ASCII));
            InputStream in = client.getInputStream();
            long read = readAtLeast(in, 10L * 1024 * 1024);
            // The client stops reading. A gateway that buffered would now pull the rest of the 100 MB into memory;
            // one that streams holds the upstream back. Wait (bounded) until the upstream stops progressing.
            awaitStall();
            long written = largeBody.written() - writtenBefore;
            long heapDuring = usedHeapAfterGc() - heapBefore;
            long directDuring = PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory() - directBefore;
            System.out.printf("100 MB response, client paused after %d MB: upstream wrote %d MB, heap growth %d MB, "
                    + "pooled direct growth %d MB%n", read >> 20, written >> 20, heapDuring >> 20, directDuring >> 20);
            assertThat(written).as("the upstream is held back, not read ahead").isLessThan(HUNDRED_MB / 2);
            assertThat(heapDuring).isLessThan(32L * 1024 * 1024);
            assertThat(directDuring).isLessThan(32L * 1024 * 1024);

            read += readAtLeast(in, HUNDRED_MB - read);
            assertThat(read).as("all of it reached the client").isGreaterThanOrEqualTo(HUNDRED_MB);
        }
    }

    @Test
    void aThousandWaitersOnOneKeyHoldNoThreadAndSpinNoLoop() throws Exception {
        String key = newKey();
        held.reset();
        ConnectionProvider connections = ConnectionProvider.builder("thousand").maxConnections(1100)
                .pendingAcquireMaxCount(-1).build();
        WebClient web = WebClient.builder().baseUrl("http://127.0.0.1:" + port)
                .clientConnector(new org.springframework.http.client.reactive.ReactorClientHttpConnector(
                        HttpClient.create(connections).responseTimeout(Duration.ofSeconds(60))))
                .build();
        String hash = new IdempotencyScope("", "held-wait", new IdempotencyKey(key)).hash();
        int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
        Flux<ResponseEntity<String>> all = Flux.range(0, 1000)
                .flatMap(i -> web.post().uri("/held-wait/thousand").header("Idempotency-Key", key).bodyValue("same")
                        .retrieve().toEntity(String.class), 1000)
                .cache();
        all.subscribe();
        // Everyone but the one forwarded request is waiting (bounded poll on the gateway's own waiter count), each
        // past its second look at the record (the gauge counts a request once that look found it still in flight).
        Flux.interval(Duration.ofMillis(20)).onBackpressureDrop()
                .filter(t -> signals.waiters(hash) >= 999
                        && meters.get(IdempotencyMetrics.WAITING).gauge().value() >= 999)
                .next().block(Duration.ofSeconds(30));

        int threadsWaiting = ManagementFactory.getThreadMXBean().getThreadCount();
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long commandsBefore = redisCommandsProcessed();
        long cpuBefore = os.getProcessCpuTime();
        long wallBefore = System.nanoTime();
        Flux.interval(Duration.ofMillis(1000)).next().block();
        double cpuShare = (double) (os.getProcessCpuTime() - cpuBefore) / (System.nanoTime() - wallBefore);
        // INFO itself counts as one command.
        long commandsWhileWaiting = redisCommandsProcessed() - commandsBefore - 1;
        System.out.printf("1000 waiters: %d threads before, %d while waiting; over 1 s of waiting: %d Redis commands, "
                + "CPU %.0f%% of one core (whole test JVM)%n", threadsBefore, threadsWaiting, commandsWhileWaiting,
                cpuShare * 100);
        assertThat(signals.waiters(hash)).isGreaterThanOrEqualTo(999);
        assertThat(threadsWaiting - threadsBefore).as("no thread per waiter").isLessThan(100);
        // Waiters are woken by a signal, they do not poll: Redis hears (almost) nothing from them while they wait.
        // What it hears is the gateway's background work, the same with or without waiters: the fleet's process
        // polling (a look at its directory per tick, 100 ms in this context, three commands with the script's own).
        // Waiters polling even once a second would be a thousand.
        assertThat(held.requests()).as("the original is still held upstream").isEqualTo(1);
        assertThat(commandsWhileWaiting).as("no polling while waiting").isLessThan(100);

        held.release();
        List<ResponseEntity<String>> responses = all.collectList().block(Duration.ofSeconds(60));
        assertThat(responses).hasSize(1000).allSatisfy(r -> assertThat(r.getBody()).isEqualTo("once"));
        assertThat(held.requests()).as("forwarded once").isEqualTo(1);
        connections.dispose();
    }

    private long redisCommandsProcessed() {
        java.util.Properties stats = redisConnectionFactory.getReactiveConnection().serverCommands().info("stats")
                .block(Duration.ofSeconds(5));
        return Long.parseLong(stats.getProperty("total_commands_processed").trim());
    }

    private static long readAtLeast(InputStream in, long bytes) throws IOException {
        byte[] buffer = new byte[64 * 1024];
        long read = 0;
        while (read < bytes) {
            int n = in.read(buffer);
            if (n < 0) {
                break;
            }
            read += n;
        }
        return read;
    }

    /** Polls (bounded) until the upstream's written count stops moving for half a second. */
    private static void awaitStall() {
        long[] last = {-1};
        int[] still = {0};
        Flux.interval(Duration.ofMillis(100)).onBackpressureDrop()
                .filter(t -> {
                    long now = largeBody.written();
                    still[0] = now == last[0] ? still[0] + 1 : 0;
                    last[0] = now;
                    return still[0] >= 5;
                })
                .next().block(Duration.ofSeconds(30));
    }

    private static long usedHeapAfterGc() {
        System.gc();
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** One endpoint whose answer (202 "once") waits for {@link #release}; counts what it receives. */
    static final class HeldUpstream {
        private final HttpServer server;
        private final AtomicInteger requests = new AtomicInteger();
        private volatile CountDownLatch released = new CountDownLatch(1);

        HeldUpstream() {
            try {
                server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            server.setExecutor(Executors.newCachedThreadPool());
            server.createContext("/", exchange -> {
                requests.incrementAndGet();
                exchange.getRequestBody().readAllBytes();
                try {
                    released.await(120, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                byte[] body = "once".getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(202, body.length);
                exchange.getResponseBody().write(body);
                exchange.close();
            });
            server.start();
        }

        String uri() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        void reset() {
            requests.set(0);
            released = new CountDownLatch(1);
        }

        void release() {
            released.countDown();
        }

        int requests() {
            return requests.get();
        }
    }
}
