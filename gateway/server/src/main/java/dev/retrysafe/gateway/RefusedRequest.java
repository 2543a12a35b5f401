package dev.retrysafe.gateway;

import dev.retrysafe.gateway.idempotency.response.ErrorEnvelope;
import java.time.OffsetDateTime;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.security.web.server.firewall.ServerExchangeRejectedException;
import org.springframework.security.web.server.firewall.ServerExchangeRejectedHandler;
import org.springframework.web.server.ServerWebExchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * A request Spring Security's firewall refuses (a {@code ;} or an encoded {@code /}, {@code \} or {@code .} in its
 * path, a header value it will not pass on): 400 in the gateway's error envelope, before any route, Idempotency
 * filter or upstream sees it. The firewall's reason goes to the log, not to the client.
 */
final class RefusedRequest implements ServerExchangeRejectedHandler {
    static final String MESSAGE = "The request's path or headers hold characters the gateway does not forward "
            + "(such as ';' or an encoded '/', '\\' or '.' in the path).";
    private static final Logger log = LoggerFactory.getLogger(RefusedRequest.class);

    @Override
    public Mono<Void> handle(ServerWebExchange exchange, ServerExchangeRejectedException refused) {
        log.debug("Refused {} {}: {}", exchange.getRequest().getMethod(), exchange.getRequest().getPath(),
                refused.getMessage());
        ServerHttpResponse response = exchange.getResponse();
        if (response.isCommitted()) {
            return Mono.error(refused);
        }
        byte[] body = ErrorEnvelope.json(400, MESSAGE, OffsetDateTime.now());
        response.setStatusCode(HttpStatus.BAD_REQUEST);
        response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
        response.getHeaders().setContentLength(body.length);
        return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
    }
}
