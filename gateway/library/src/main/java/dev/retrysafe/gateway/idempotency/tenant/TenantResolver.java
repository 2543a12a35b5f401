package dev.retrysafe.gateway.idempotency.tenant;

import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Who the request acts for. Part of every key's scope, so the same key from two tenants is two operations. One
 * method, like Spring Cloud Gateway's {@code KeyResolver}: declare a bean of this type to replace the default.
 */
public interface TenantResolver {
    /** The scope used when no tenant can be told. */
    String ANONYMOUS = "";

    /**
     * Emits the tenant, or completes empty when the request has none; fails with {@link TenantRejected} when the
     * request names it ambiguously (answered 422, nothing reserved).
     */
    Mono<String> resolve(ServerWebExchange exchange);
}
