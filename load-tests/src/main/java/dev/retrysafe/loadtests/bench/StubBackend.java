package dev.retrysafe.loadtests.bench;

import io.netty.handler.codec.http.HttpResponseStatus;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A fixed-latency stand-in for the Onboarding backend, cheap enough that the benchmark measures the gateway: every
 * write answers 202 with a fresh processId, {@code Location} and {@code Retry-After}, after {@code latencyMillis}.
 * Usage: {@code StubBackend <port> [latencyMillis]}. {@code GET /stats} tells how many writes it received.
 */
public final class StubBackend {
    private StubBackend() {
    }

    public static void main(String[] args) {
        int port = Integer.parseInt(args[0]);
        Duration latency = Duration.ofMillis(args.length > 1 ? Long.parseLong(args[1]) : 0);
        AtomicLong writes = new AtomicLong();
        DisposableServer server = HttpServer.create().port(port)
                .handle((request, response) -> {
                    if (request.method().name().equals("GET")) {
                        return response.header("Content-Type", "application/json")
                                .sendString(Mono.just("{\"writes\":" + writes.get() + "}")).then();
                    }
                    writes.incrementAndGet();
                    String processId = UUID.randomUUID().toString();
                    Mono<String> body = Mono.just("{\"processId\":\"" + processId + "\",\"status\":\"PENDING\"}");
                    return request.receive().then(latency.isZero() ? Mono.empty() : Mono.delay(latency).then())
                            .then(response.status(HttpResponseStatus.ACCEPTED)
                                    .header("Content-Type", "application/json")
                                    .header("Location", "/processes/" + processId)
                                    .header("Retry-After", "1")
                                    .sendString(body).then());
                })
                .bindNow();
        System.out.println("Stub backend on port " + server.port() + " with latency " + latency.toMillis() + " ms");
        server.onDispose().block();
    }
}
