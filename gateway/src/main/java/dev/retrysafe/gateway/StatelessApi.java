package dev.retrysafe.gateway;

import org.springframework.security.config.web.server.ServerHttpSecurity;

/**
 * What every security chain on the gateway's own routes leaves out: an API gateway serves no browser sessions, so
 * no CSRF tokens, HTTP Basic prompts, login or logout pages, nor saved requests to redirect back to.
 */
public final class StatelessApi {
    private StatelessApi() {
    }

    public static ServerHttpSecurity withoutBrowserFeatures(ServerHttpSecurity http) {
        return http.csrf(ServerHttpSecurity.CsrfSpec::disable)
                .httpBasic(ServerHttpSecurity.HttpBasicSpec::disable)
                .formLogin(ServerHttpSecurity.FormLoginSpec::disable)
                .logout(ServerHttpSecurity.LogoutSpec::disable)
                .requestCache(ServerHttpSecurity.RequestCacheSpec::disable);
    }
}
