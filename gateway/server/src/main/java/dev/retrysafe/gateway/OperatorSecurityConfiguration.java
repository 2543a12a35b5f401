package dev.retrysafe.gateway;

import java.net.URI;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.security.autoconfigure.actuate.web.reactive.EndpointRequest;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.reactive.EnableWebFluxSecurity;
import org.springframework.security.config.web.server.ServerHttpSecurity;
import org.springframework.security.core.userdetails.MapReactiveUserDetailsService;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetails;
import org.springframework.security.crypto.factory.PasswordEncoderFactories;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.security.web.server.WebFilterChainProxy;
import org.springframework.security.web.server.firewall.ServerExchangeRejectedHandler;
import org.springframework.security.web.server.firewall.ServerWebExchangeFirewall;
import org.springframework.security.web.server.firewall.StrictServerWebExchangeFirewall;
import org.springframework.security.web.server.authentication.RedirectServerAuthenticationSuccessHandler;
import org.springframework.security.web.server.authentication.logout.RedirectServerLogoutSuccessHandler;
import org.springframework.security.web.server.util.matcher.AndServerWebExchangeMatcher;
import org.springframework.security.web.server.util.matcher.ServerWebExchangeMatcher;
import org.springframework.security.web.server.util.matcher.ServerWebExchangeMatchers;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The runnable gateway's security: the operator endpoint ({@code /actuator/idempotency}) needs HTTP Basic with the
 * OPERATOR role; health and the Prometheus scrape stay open (health details only for operators when
 * {@code management.endpoint.health.show-details=when-authorized}); the gateway's own routes are left to the
 * routes: no security chain runs on them at all (no login, no CSRF, no headers: this is an API gateway, and a
 * permit-all chain cost every proxied request a dozen filters), unless the API-key chain guards them. The operator
 * console on the management port signs the same operators in with a form. Without
 * {@code idempotency.operator.password} nobody can use the operator endpoint or the console.
 */
@Configuration(proxyBeanMethods = false)
@EnableWebFluxSecurity
@EnableConfigurationProperties(OperatorSecurityConfiguration.OperatorProperties.class)
class OperatorSecurityConfiguration {
    private static final String CONSOLE = "/console";

    @Bean
    @Order(1)
    SecurityWebFilterChain operatorEndpointSecurity(ServerHttpSecurity http) {
        return http.securityMatcher(EndpointRequest.toAnyEndpoint())
                .authorizeExchange(exchanges -> exchanges
                        // Health (details only for operators) and the Prometheus scrape hold no record data; the
                        // management port is bound to localhost.
                        .matchers(EndpointRequest.to("health", "prometheus")).permitAll()
                        .anyExchange().hasRole("OPERATOR"))
                .httpBasic(Customizer.withDefaults())
                .csrf(ServerHttpSecurity.CsrfSpec::disable)
                .build();
    }

    /**
     * The operator console ({@code /console/**} on the management port only: on the gateway's port these paths
     * belong to the routes, and no chain touches them). A browser's login: a form and a session rather than HTTP
     * Basic, so that an operator can sign out, and with CSRF protection, since its settlements are form POSTs a
     * browser would otherwise send from any page. Same accounts and role as the operator API.
     */
    @Bean
    @Order(0)
    SecurityWebFilterChain operatorConsoleSecurity(ServerHttpSecurity http) {
        return http.securityMatcher(new AndServerWebExchangeMatcher(OperatorSecurityConfiguration::onManagementServer,
                        ServerWebExchangeMatchers.pathMatchers(CONSOLE, CONSOLE + "/**")))
                .authorizeExchange(exchanges -> exchanges
                        .pathMatchers(CONSOLE + "/login").permitAll()
                        .anyExchange().hasRole("OPERATOR"))
                .formLogin(form -> form.loginPage(CONSOLE + "/login")
                        .authenticationSuccessHandler(new RedirectServerAuthenticationSuccessHandler(CONSOLE)))
                .logout(logout -> logout.logoutUrl(CONSOLE + "/logout")
                        .logoutSuccessHandler(signedOut()))
                .httpBasic(ServerHttpSecurity.HttpBasicSpec::disable)
                // Spring Security's headers (no-store, nosniff, X-Frame-Options DENY...) plus: no script, no
                // resource from elsewhere, forms only to the console itself.
                .headers(headers -> headers.contentSecurityPolicy(csp -> csp.policyDirectives(
                        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
                                + "frame-ancestors 'none'; base-uri 'none'")))
                .build();
    }

    private static RedirectServerLogoutSuccessHandler signedOut() {
        RedirectServerLogoutSuccessHandler handler = new RedirectServerLogoutSuccessHandler();
        handler.setLogoutSuccessUrl(URI.create(CONSOLE + "/login?logout"));
        return handler;
    }

    /** A request to the management server's own port (its child context), not to the gateway's. */
    private static Mono<ServerWebExchangeMatcher.MatchResult> onManagementServer(ServerWebExchange exchange) {
        return WebServerApplicationContext.hasServerNamespace(exchange.getApplicationContext(), "management")
                ? ServerWebExchangeMatcher.MatchResult.match()
                : ServerWebExchangeMatcher.MatchResult.notMatch();
    }

    /**
     * Spring Security's chain selection with a fast way through for requests no chain applies to
     * ({@link SecurityChainSelection}); the chains, their order, the firewall and its rejections are the proxy's.
     */
    @Bean
    static BeanPostProcessor securityChainSelection(ObjectProvider<SecurityWebFilterChain> chains,
            ObjectProvider<ServerWebExchangeFirewall> firewall, ObjectProvider<ServerExchangeRejectedHandler> rejected) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String name) {
                return bean instanceof WebFilterChainProxy proxy
                        ? new SecurityChainSelection(proxy, chains.orderedStream().toList(),
                                firewall.getIfUnique(StrictServerWebExchangeFirewall::new),
                                rejected.getIfUnique(RefusedRequest::new))
                        : bean;
            }
        };
    }

    /** What Spring Security's firewall refuses, answered in the gateway's envelope (its default is a bare 400). */
    @Bean
    ServerExchangeRejectedHandler refusedRequest() {
        return new RefusedRequest();
    }

    @Bean
    MapReactiveUserDetailsService operators(OperatorProperties operator) {
        if (operator.password() == null || operator.password().isBlank()) {
            // No credentials configured: an account nobody can log into keeps the endpoint closed.
            return new MapReactiveUserDetailsService(User.withUsername(operator.username())
                    .password("{noop}" + java.util.UUID.randomUUID()).roles("NONE").build());
        }
        UserDetails user = User.withUsername(operator.username())
                .password(PasswordEncoderFactories.createDelegatingPasswordEncoder().encode(operator.password()))
                .roles("OPERATOR").build();
        return new MapReactiveUserDetailsService(user);
    }

    /**
     * Credentials of the operator API.
     *
     * @param username Operator user of the operator API (HTTP Basic) and of the operator console's sign-in.
     * @param password Password of that operator user. Unset: nobody can use the operator API or the console.
     */
    @ConfigurationProperties("idempotency.operator")
    record OperatorProperties(@org.springframework.boot.context.properties.bind.DefaultValue("operator") String username,
            String password) {
    }
}
