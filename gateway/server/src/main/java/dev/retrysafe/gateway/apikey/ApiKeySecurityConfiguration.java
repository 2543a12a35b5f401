package dev.retrysafe.gateway.apikey;

import dev.retrysafe.gateway.StatelessApi;
import dev.retrysafe.gateway.idempotency.response.ErrorEnvelope;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.stream.Stream;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.security.authentication.BadCredentialsException;
import org.springframework.security.authentication.ReactiveAuthenticationManager;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.config.web.server.SecurityWebFiltersOrder;
import org.springframework.security.config.web.server.ServerHttpSecurity;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.security.web.server.ServerAuthenticationEntryPoint;
import org.springframework.security.web.server.authentication.AuthenticationWebFilter;
import org.springframework.security.web.server.authentication.ServerAuthenticationConverter;
import org.springframework.security.web.server.authentication.ServerAuthenticationEntryPointFailureHandler;
import org.springframework.security.web.server.authentication.ServerAuthenticationSuccessHandler;
import org.springframework.security.web.server.util.matcher.ServerWebExchangeMatchers;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * API-key authentication for the runnable gateway, on with {@code idempotency.api-keys.enabled=true}: a request on
 * the configured paths must carry a known key in {@code Authorization: Bearer <key>} or {@code X-Api-Key}; the
 * key's tenant becomes the authenticated principal, and so the tenant of every idempotency scope. A missing or
 * unknown key is a 401 in the gateway's error envelope, the same for both, and never reaches the Idempotency
 * filter or the upstream. The key is taken off the request before it is forwarded: it is the gateway's credential.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty("idempotency.api-keys.enabled")
@EnableConfigurationProperties(ApiKeyProperties.class)
class ApiKeySecurityConfiguration {
    static final String API_KEY_HEADER = "X-Api-Key";
    private static final String BEARER = "Bearer ";
    static final String UNAUTHORIZED_MESSAGE =
            "A valid API key is required: send it as Authorization: Bearer <key> or X-Api-Key: <key>.";

    /** After the operator endpoint's chain (order 1): actuator requests never need an API key. */
    @Bean
    @Order(2)
    SecurityWebFilterChain apiKeyRoutes(ServerHttpSecurity http, ApiKeyProperties properties) {
        ApiKeyTenants tenants = new ApiKeyTenants(properties.keys());
        ServerAuthenticationEntryPoint unauthorized = (exchange, e) -> unauthorized(exchange.getResponse());
        AuthenticationWebFilter authentication = new AuthenticationWebFilter(authenticationManager(tenants));
        authentication.setServerAuthenticationConverter(presentedKey());
        authentication.setAuthenticationFailureHandler(new ServerAuthenticationEntryPointFailureHandler(unauthorized));
        authentication.setAuthenticationSuccessHandler(forwardWithoutTheKey());
        return StatelessApi.withoutBrowserFeatures(http)
                .securityMatcher(ServerWebExchangeMatchers.pathMatchers(properties.paths().toArray(String[]::new)))
                .authorizeExchange(exchanges -> exchanges.anyExchange().authenticated())
                .addFilterAt(authentication, SecurityWebFiltersOrder.AUTHENTICATION)
                .exceptionHandling(handling -> handling.authenticationEntryPoint(unauthorized))
                .build();
    }

    private static ReactiveAuthenticationManager authenticationManager(ApiKeyTenants tenants) {
        return presented -> Mono.justOrEmpty(tenants.tenantOf((String) presented.getCredentials()))
                .<Authentication>map(tenant -> UsernamePasswordAuthenticationToken.authenticated(tenant, null,
                        AuthorityUtils.createAuthorityList("ROLE_TENANT")))
                .switchIfEmpty(Mono.error(() -> new BadCredentialsException("Unknown API key")));
    }

    /** The key from either header; none is anonymous (then 401), two different ones are refused. */
    private static ServerAuthenticationConverter presentedKey() {
        return exchange -> {
            HttpHeaders headers = exchange.getRequest().getHeaders();
            List<String> presented = Stream.concat(headers.getOrEmpty(API_KEY_HEADER).stream(),
                            headers.getOrEmpty(HttpHeaders.AUTHORIZATION).stream()
                                    .filter(value -> value.regionMatches(true, 0, BEARER, 0, BEARER.length()))
                                    .map(value -> value.substring(BEARER.length())))
                    .map(String::trim).distinct().toList();
            if (presented.isEmpty()) {
                return Mono.empty();
            }
            if (presented.size() > 1 || presented.get(0).isEmpty()) {
                return Mono.error(new BadCredentialsException("Ambiguous or empty API key"));
            }
            return Mono.just(UsernamePasswordAuthenticationToken.unauthenticated(null, presented.get(0)));
        };
    }

    private static ServerAuthenticationSuccessHandler forwardWithoutTheKey() {
        return (filterExchange, authentication) -> {
            ServerWebExchange exchange = filterExchange.getExchange();
            ServerWebExchange withoutKey = exchange.mutate().request(request -> request.headers(headers -> {
                headers.remove(API_KEY_HEADER);
                List<String> others = headers.getOrEmpty(HttpHeaders.AUTHORIZATION).stream()
                        .filter(value -> !value.regionMatches(true, 0, BEARER, 0, BEARER.length())).toList();
                headers.remove(HttpHeaders.AUTHORIZATION);
                if (!others.isEmpty()) {
                    headers.put(HttpHeaders.AUTHORIZATION, others);
                }
            })).build();
            return filterExchange.getChain().filter(withoutKey);
        };
    }

    private static Mono<Void> unauthorized(ServerHttpResponse response) {
        byte[] body = ErrorEnvelope.json(401, UNAUTHORIZED_MESSAGE, OffsetDateTime.now());
        response.setStatusCode(HttpStatus.UNAUTHORIZED);
        response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
        response.getHeaders().setContentLength(body.length);
        response.getHeaders().set(HttpHeaders.WWW_AUTHENTICATE, "Bearer");
        return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
    }
}
