package dev.retrysafe.gateway;

import org.springframework.security.config.web.server.ServerHttpSecurity;

/**
 * What every security chain on the gateway's own routes leaves out: an API gateway serves no browser sessions, so
 * no CSRF tokens, HTTP Basic prompts, login or logout pages, nor saved requests to redirect back to. Nor Spring
 * Security's response headers ({@code Cache-Control: no-store}, {@code X-Frame-Options}...): a proxied response
 * is passed back as the upstream sent it, and only the upstream knows whether it may be cached or framed.
 */
public final class StatelessApi {
    private StatelessApi() {
    }

    public static ServerHttpSecurity withoutBrowserFeatures(ServerHttpSecurity http) {
        return http.csrf(ServerHttpSecurity.CsrfSpec::disable)
                .httpBasic(ServerHttpSecurity.HttpBasicSpec::disable)
                .formLogin(ServerHttpSecurity.FormLoginSpec::disable)
                .logout(ServerHttpSecurity.LogoutSpec::disable)
                .requestCache(ServerHttpSecurity.RequestCacheSpec::disable)
                .headers(ServerHttpSecurity.HeaderSpec::disable);
    }
}
