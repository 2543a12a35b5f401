package dev.retrysafe.gateway.idempotency.openapi;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Where the gateway publishes the OpenAPI description of the responses it produces itself, under
 * {@code idempotency.openapi.*}.
 *
 * @param enabled whether it is served at all
 * @param path    the path on the gateway's main port; it wins over a route with the same path
 */
@ConfigurationProperties("idempotency.openapi")
public record OpenApiProperties(@DefaultValue("true") boolean enabled,
        @DefaultValue(OpenApiProperties.DEFAULT_PATH) String path) {
    public static final String DEFAULT_PATH = "/idempotency/openapi.yaml";
}
