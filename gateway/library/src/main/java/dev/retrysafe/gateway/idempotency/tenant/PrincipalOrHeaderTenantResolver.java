package dev.retrysafe.gateway.idempotency.tenant;

import java.util.List;
import java.util.Set;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The authenticated principal's name when there is one, else the configured tenant header. The header is only
 * trustworthy on networks where clients cannot set it themselves. Each source gets its own prefix, so a header
 * value can never impersonate a principal's scope. A header naming more than one tenant is rejected
 * ({@link TenantRejected}): sent again with another value, or holding a comma (a list folded into one line, RFC 9110
 * 5.3). The same value sent twice is that one tenant.
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
                .map(principal -> "principal:" + principal.getName())
                .switchIfEmpty(Mono.fromSupplier(() -> fromHeader(exchange)));
    }

    private String fromHeader(ServerWebExchange exchange) {
        if (tenantHeader == null) {
            return null;
        }
        List<String> values = exchange.getRequest().getHeaders().get(tenantHeader);
        if (values == null || values.isEmpty()) {
            return null;
        }
        Set<String> tenants = Set.copyOf(values);
        if (tenants.size() > 1 || values.get(0).indexOf(',') >= 0) {
            throw new TenantRejected(tenantHeader);
        }
        return "header:" + values.get(0);
    }
}
