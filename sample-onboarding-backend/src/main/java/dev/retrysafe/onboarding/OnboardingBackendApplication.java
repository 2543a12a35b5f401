package dev.retrysafe.onboarding;

import java.time.Duration;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.netty.resources.LoopResources;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.autoconfigure.context.PropertyPlaceholderAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.http.codec.autoconfigure.CodecsAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.reactor.autoconfigure.ReactorAutoConfiguration;
import org.springframework.boot.reactor.netty.autoconfigure.NettyReactiveWebServerAutoConfiguration;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.boot.webflux.autoconfigure.HttpHandlerAutoConfiguration;
import org.springframework.boot.webflux.autoconfigure.WebFluxAutoConfiguration;
import org.springframework.boot.webflux.autoconfigure.error.ErrorWebFluxAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.event.EventListener;
import org.springframework.http.client.ReactorResourceFactory;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * A legacy-style onboarding service: it accepts merchant writes with 202, finishes them later, and has no
 * idempotency of its own, so a retried POST creates a second merchant. Its lookup of a write by the key it was sent
 * with ({@code GET /processes/by-idempotency-key/{key}}, what the gateway's reconciliation asks) wants
 * {@code Authorization: Bearer <onboarding.lookup-token>} (env {@code ONBOARDING_LOOKUP_TOKEN}, a development default
 * otherwise) and answers 401 without it.
 *
 * <p>The gateway's tests run this in their own JVM, next to the gateway, with the gateway's classpath.
 * Hence four deliberate choices:
 * <ul>
 *   <li>{@code @Configuration}, not {@code @SpringBootConfiguration}/{@code @SpringBootApplication}, and no
 *       component scanning, so that neither {@code @SpringBootTest}'s search nor anyone's scan picks this up;</li>
 *   <li>an explicit list of auto-configurations, so the backend does not also become a Spring Cloud Gateway
 *       or open Redis connections just because those jars are on the classpath;</li>
 *   <li>its own Reactor Netty event loops (see {@link #reactorResourceFactory()});</li>
 *   <li>its defaults live in {@code onboarding-backend.properties} and {@link #start} sets
 *       {@code spring.config.name=onboarding-backend}: it never reads the gateway's {@code application.yml},
 *       and the gateway never reads its file.</li>
 * </ul>
 */
@Configuration(proxyBeanMethods = false)
@ImportAutoConfiguration({
        PropertyPlaceholderAutoConfiguration.class,
        ReactorAutoConfiguration.class,
        JacksonAutoConfiguration.class,
        CodecsAutoConfiguration.class,
        NettyReactiveWebServerAutoConfiguration.class,
        HttpHandlerAutoConfiguration.class,
        WebFluxAutoConfiguration.class,
        ErrorWebFluxAutoConfiguration.class })
@EnableConfigurationProperties(OnboardingProperties.class)
@Import({ OnboardingLedger.class, OnboardingHandler.class, WriteLog.class })
public class OnboardingBackendApplication {

    /** The name of this backend's own configuration file(s): {@code onboarding-backend.properties}. */
    public static final String CONFIG_NAME = "onboarding-backend";

    private static final Logger log = LoggerFactory.getLogger(OnboardingBackendApplication.class);

    public static void main(String[] args) {
        start(args);
    }

    /**
     * Starts the backend and returns its context; close it to stop the server.
     *
     * <p>{@code args} are command-line style, e.g. {@code start("--server.port=0",
     * "--onboarding.processing-delay=200ms")}; they win over the defaults in {@code onboarding-backend.properties}.
     * The port actually bound is in the {@code local.server.port} property of the returned context's environment;
     * the counters are on its {@link OnboardingLedger} bean.
     */
    public static ConfigurableApplicationContext start(String... args) {
        return new SpringApplicationBuilder(OnboardingBackendApplication.class)
                .main(OnboardingBackendApplication.class)
                .web(WebApplicationType.REACTIVE)
                // A default property, so that "--spring.config.name=..." can still override it.
                .properties("spring.config.name=" + CONFIG_NAME)
                .run(args);
    }

    /**
     * Own event loops instead of Reactor Netty's JVM-wide ones. With the default (global) resources, closing this
     * context disposes the loops that every other Spring context in the JVM serves on, e.g. the gateway under test.
     */
    @Bean
    ReactorResourceFactory reactorResourceFactory() {
        ReactorResourceFactory resources = new ReactorResourceFactory();
        resources.setUseGlobalResources(false);
        resources.setLoopResourcesSupplier(() -> LoopResources.create("onboarding-http"));
        resources.setShutdownQuietPeriod(Duration.ZERO); // nothing in flight is worth waiting 2 s for on close
        return resources;
    }

    @Bean
    RouterFunction<ServerResponse> onboardingRoutes(OnboardingHandler handler) {
        return RouterFunctions.route()
                .POST("/merchants", handler::create)
                .PUT("/merchants/{merchantId}", handler::update)
                .GET("/merchants/by-tax-id/{taxId}", handler::merchantByTaxId)
                .GET("/merchants/{merchantId}", handler::merchant)
                .GET("/processes/by-idempotency-key/{key}", handler::processByIdempotencyKey)
                .GET("/processes/{processId}", handler::process)
                .GET("/stats", handler::stats)
                .build();
    }

    @EventListener
    void announce(WebServerInitializedEvent event) {
        log.info("Onboarding backend (no idempotency) on http://localhost:{} - try: curl -i -X POST -H 'Content-Type: application/json' "
                + "-d '{\"legalName\":\"ACME\",\"taxId\":\"ACME1234\"}' localhost:{}/merchants",
                event.getWebServer().getPort(), event.getWebServer().getPort());
    }
}
