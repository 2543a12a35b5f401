package dev.retrysafe.gateway.idempotency.openapi;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.io.ClassPathResource;
import org.springframework.core.io.Resource;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RequestPredicates;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * Serves the OpenAPI description of the gateway's own responses (error envelopes, replay headers) on the main
 * port, so that integrators can reference its components and generate clients that know them. A functional route
 * is matched before the gateway's routes, so the path is never proxied.
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnProperty(prefix = "idempotency.openapi", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(OpenApiProperties.class)
public class IdempotencyOpenApiAutoConfiguration {
    /** RFC 9512; YAML is UTF-8 by definition, so there is no charset parameter. */
    public static final MediaType APPLICATION_YAML = MediaType.parseMediaType("application/yaml");
    public static final String DOCUMENT_LOCATION = "META-INF/openapi/idempotency-gateway.yaml";

    @Bean
    RouterFunction<ServerResponse> idempotencyOpenApiRoute(OpenApiProperties properties) {
        Resource document = new ClassPathResource(DOCUMENT_LOCATION, IdempotencyOpenApiAutoConfiguration.class
                .getClassLoader());
        return RouterFunctions.route(RequestPredicates.GET(properties.path()),
                request -> ServerResponse.ok().contentType(APPLICATION_YAML).bodyValue(document));
    }
}
