package dev.retrysafe.gateway.idempotency.tenant;

import static org.assertj.core.api.Assertions.assertThat;

import java.security.Principal;
import org.junit.jupiter.api.Test;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.ServerWebExchange;

class PrincipalOrHeaderTenantResolverTest {
    final PrincipalOrHeaderTenantResolver resolver = new PrincipalOrHeaderTenantResolver("X-Tenant-Id");

    @Test
    void theAuthenticatedPrincipalWinsOverTheHeader() {
        ServerWebExchange exchange = MockServerWebExchange.from(
                        MockServerHttpRequest.post("/merchants").header("X-Tenant-Id", "from-header"))
                .mutate().principal(reactor.core.publisher.Mono.just((Principal) () -> "alice")).build();
        assertThat(resolver.resolve(exchange).block()).isEqualTo("principal:alice");
    }

    @Test
    void theHeaderIsUsedWithoutAPrincipal() {
        ServerWebExchange exchange = MockServerWebExchange.from(
                MockServerHttpRequest.post("/merchants").header("X-Tenant-Id", "acme"));
        assertThat(resolver.resolve(exchange).block()).isEqualTo("header:acme");
    }

    @Test
    void aHeaderValueCannotImpersonateAPrincipalsScope() {
        ServerWebExchange spoofed = MockServerWebExchange.from(
                MockServerHttpRequest.post("/merchants").header("X-Tenant-Id", "principal:alice"));
        assertThat(resolver.resolve(spoofed).block()).isNotEqualTo("principal:alice");
    }

    @Test
    void noPrincipalAndNoHeaderIsEmptySoTheFilterUsesTheAnonymousScope() {
        ServerWebExchange exchange = MockServerWebExchange.from(MockServerHttpRequest.post("/merchants"));
        assertThat(resolver.resolve(exchange).blockOptional()).isEmpty();
        assertThat(new PrincipalOrHeaderTenantResolver(null).resolve(MockServerWebExchange.from(
                MockServerHttpRequest.post("/m").header("X-Tenant-Id", "acme"))).blockOptional()).isEmpty();
    }

    @Test
    void twoDifferentValuesOrAListAreRejectedNeverJoined() {
        for (String[] values : new String[][] {{"acme", "globex"}, {"acme,globex"}, {"acme", "acme,globex"}}) {
            ServerWebExchange exchange = MockServerWebExchange.from(
                    MockServerHttpRequest.post("/merchants").header("X-Tenant-Id", values));
            assertThat(resolver.resolve(exchange).onErrorResume(TenantRejected.class,
                    e -> reactor.core.publisher.Mono.just("rejected: " + e.header())).block())
                    .isEqualTo("rejected: X-Tenant-Id");
        }
    }

    @Test
    void theSameValueTwiceIsOneTenant() {
        ServerWebExchange exchange = MockServerWebExchange.from(
                MockServerHttpRequest.post("/merchants").header("X-Tenant-Id", "acme", "acme"));
        assertThat(resolver.resolve(exchange).block()).isEqualTo("header:acme");
    }

    @Test
    void aPrincipalMakesTheHeaderIrrelevant() {
        ServerWebExchange exchange = MockServerWebExchange.from(
                        MockServerHttpRequest.post("/merchants").header("X-Tenant-Id", "acme", "globex"))
                .mutate().principal(reactor.core.publisher.Mono.just((Principal) () -> "alice")).build();
        assertThat(resolver.resolve(exchange).block()).isEqualTo("principal:alice");
    }
}
