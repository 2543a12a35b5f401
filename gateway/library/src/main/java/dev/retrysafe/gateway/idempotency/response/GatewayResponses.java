package dev.retrysafe.gateway.idempotency.response;

import dev.retrysafe.gateway.idempotency.decision.ReplayResponse;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.store.StoredResponseUnreadable;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.Optional;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.web.server.ServerWebExchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.netty.Connection;
import reactor.netty.channel.AbortedException;

/** Writes what the gateway answers without calling the upstream: errors, in the route's contract, and replays. */
public final class GatewayResponses {
    private static final Logger log = LoggerFactory.getLogger(GatewayResponses.class);
    private final Clock clock;
    private final ErrorContract contract;
    private final MediaType errorType;

    public GatewayResponses(Clock clock, ErrorContract contract) {
        this.clock = clock;
        this.contract = contract;
        this.errorType = MediaType.parseMediaType(contract.mediaType());
    }

    public Mono<Void> error(ServerWebExchange exchange, GatewayError error) {
        ServerHttpResponse response = exchange.getResponse();
        if (response.isCommitted()) {
            return Mono.empty();
        }
        byte[] body = contract.body(error, OffsetDateTime.now(clock));
        response.setStatusCode(HttpStatusCode.valueOf(contract.status(error.kind())));
        HttpHeaders headers = response.getHeaders();
        headers.setContentType(errorType);
        headers.setContentLength(body.length);
        error.retryAfter().ifPresent(delay ->
                headers.set(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, delay.toSeconds()))));
        return write(response, body);
    }

    /**
     * Writes a stored response back. One HTTP cannot carry fails with {@link StoredResponseUnreadable} before
     * anything is set on the response: Netty would refuse it halfway, a 5xx on every retry of the key, where the
     * request was processed and only its replay is lost. (The filter's reservation loop already answers those
     * without calling this; the check stays here because no caller may get it wrong.)
     */
    public Mono<Void> replay(ServerWebExchange exchange, ReplayResponse replay) {
        Optional<String> unwritable = replay.unwritable();
        if (unwritable.isPresent()) {
            return Mono.error(new StoredResponseUnreadable(replay.originalStatus(), unwritable.get()));
        }
        ServerHttpResponse response = exchange.getResponse();
        response.setStatusCode(HttpStatusCode.valueOf(replay.status()));
        HttpHeaders headers = response.getHeaders();
        for (ResponseHeader header : replay.headers()) {
            headers.add(header.name(), header.value());
        }
        headers.setContentLength(replay.body().length);
        return write(response, replay.body());
    }

    /**
     * The answer runs detached from its client: a client that hung up meanwhile makes the write fail after nobody
     * listens. Expected and harmless (nothing was stored by this write); left alone, Reactor would log it as an
     * ERROR with a stack trace, once per impatient client.
     */
    private static Mono<Void> write(ServerHttpResponse response, byte[] body) {
        return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)))
                .onErrorResume(failure -> clientGone(response, failure), gone -> {
                    log.debug("The client went away before its answer was written: {}", gone.toString());
                    return Mono.empty();
                });
    }

    /**
     * The write failed because the connection is closed: reactor-netty says so with AbortedException, or Netty,
     * when the channel was already deregistered, with "channel not registered to an event loop". Judged by the
     * connection itself, so that no other failure is taken for a client gone.
     */
    private static boolean clientGone(ServerHttpResponse response, Throwable failure) {
        if (failure instanceof AbortedException) {
            return true;
        }
        Object nativeResponse;
        try {
            nativeResponse = ServerHttpResponseDecorator.getNativeResponse(response);
        } catch (IllegalArgumentException notNetty) {
            return false;
        }
        return nativeResponse instanceof Connection connection && !connection.channel().isActive();
    }
}
