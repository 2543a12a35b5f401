package dev.retrysafe.gateway;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.security.autoconfigure.actuate.web.reactive.EndpointRequest;
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

/**
 * The runnable gateway's security: the operator endpoint ({@code /actuator/idempotency}) needs HTTP Basic with the
 * OPERATOR role; health and the Prometheus scrape stay open (health details only for operators when
 * {@code management.endpoint.health.show-details=when-authorized}); the gateway's own routes are left to the
 * routes: no security chain runs on them at all (no login, no CSRF, no headers: this is an API gateway, and a
 * permit-all chain cost every proxied request a dozen filters), unless the API-key chain guards them. Without
 * {@code idempotency.operator.password} nobody can use the operator endpoint.
 */
@Configuration(proxyBeanMethods = false)
@EnableWebFluxSecurity
@EnableConfigurationProperties(OperatorSecurityConfiguration.OperatorProperties.class)
class OperatorSecurityConfiguration {

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

    /** Credentials of the operator API. */
    @ConfigurationProperties("idempotency.operator")
    record OperatorProperties(@org.springframework.boot.context.properties.bind.DefaultValue("operator") String username,
            String password) {
    }
}
