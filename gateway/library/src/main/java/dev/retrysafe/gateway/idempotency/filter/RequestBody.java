package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.observability.RequestOutcome;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.wire.MalformedRequestBody;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.server.reactive.ServerHttpRequest;
import reactor.core.publisher.Mono;

/** A guarded request's body as read, or why it was not: the refusal comes before anything is reserved. */
record RequestBody(byte[] bytes, Optional<Refusal> refused) {
    record Refusal(RequestOutcome outcome, GatewayError error) {
    }

    /**
     * Reads the body, holding at most max-request-bytes of it, for at most request-body-timeout: a client that
     * stops sending mid-body would otherwise hold the connection and the buffer forever without an answer. A body
     * that does not arrive whole and well-framed is a refusal.
     */
    static Mono<RequestBody> read(ServerHttpRequest request, RoutePolicy policy) {
        return DataBufferUtils.join(request.getBody(), policy.maxRequestBytes())
                .timeout(policy.requestBodyTimeout())
                .map(buffer -> {
                    try {
                        byte[] bytes = new byte[buffer.readableByteCount()];
                        buffer.read(bytes);
                        return of(bytes);
                    } finally {
                        DataBufferUtils.release(buffer);
                    }
                })
                .defaultIfEmpty(of(new byte[0]))
                // One operator for every way the read can fail (each its own would be four on every request).
                .onErrorResume(e -> Mono.just(refusal(e, policy)));
    }

    private static RequestBody of(byte[] bytes) {
        return new RequestBody(bytes, Optional.empty());
    }

    private static RequestBody refused(RequestOutcome outcome, GatewayError error) {
        return new RequestBody(new byte[0], Optional.of(new Refusal(outcome, error)));
    }

    private static RequestBody refusal(Throwable readFailure, RoutePolicy policy) {
        if (readFailure instanceof DataBufferLimitException) {
            return refused(RequestOutcome.TOO_LARGE, GatewayError.bodyTooLarge(policy.maxRequestBytes()));
        }
        if (readFailure instanceof TimeoutException) {
            return refused(RequestOutcome.BODY_TIMEOUT, GatewayError.bodyTimeout(policy.requestBodyTimeout()));
        }
        if (readFailure instanceof MalformedRequestBody) {
            return refused(RequestOutcome.MALFORMED_BODY, GatewayError.malformedBody());
        }
        // The connection ended mid-body (or any other read failure): nothing was reserved, nothing is sent.
        return refused(RequestOutcome.BODY_INCOMPLETE, GatewayError.bodyIncomplete());
    }
}
