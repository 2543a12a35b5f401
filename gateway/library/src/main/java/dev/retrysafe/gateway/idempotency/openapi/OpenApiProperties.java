package dev.retrysafe.gateway.idempotency.openapi;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Where the gateway publishes the OpenAPI description of the responses it produces itself, under
 * {@code idempotency.openapi.*}.
 *
 * @param enabled Whether the OpenAPI description of the gateway's own responses is served.
 * @param path    Where it is served, on the gateway's main port; it is matched before the routes, so a route with
 *                the same path is shadowed.
 */
@ConfigurationProperties("idempotency.openapi")
public record OpenApiProperties(@DefaultValue("true") boolean enabled,
        @DefaultValue(OpenApiProperties.DEFAULT_PATH) String path) {
    public static final String DEFAULT_PATH = "/idempotency/openapi.yaml";
}
