package dev.retrysafe.gateway.idempotency.tenant;

import java.security.Principal;
import java.util.List;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The authenticated principal's name when there is one, else the configured tenant header. The header is only
 * trustworthy on networks where clients cannot set it themselves. Each source gets its own prefix, so a header
 * value can never impersonate a principal's scope.
 */
public final class PrincipalOrHeaderTenantResolver implements TenantResolver {
    private final String tenantHeader;

    /** @param tenantHeader header to read the tenant from, or null/blank for none */
    public PrincipalOrHeaderTenantResolver(String tenantHeader) {
        this.tenantHeader = tenantHeader == null || tenantHeader.isBlank() ? null : tenantHeader;
    }

    @Override
    public Mono<String> resolve(ServerWebExchange exchange) {
        return exchange.getPrincipal()
                .map(Principal::getName)
                .map(name -> "principal:" + name)
                .switchIfEmpty(Mono.fromSupplier(() -> fromHeader(exchange)));
    }

    private String fromHeader(ServerWebExchange exchange) {
        if (tenantHeader == null) {
            return null;
        }
        List<String> values = exchange.getRequest().getHeaders().get(tenantHeader);
        return values == null || values.isEmpty() ? null : "header:" + String.join(",", values);
    }
}
