package dev.retrysafe.gateway.idempotency.openapi;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.RouterFunction;

/** Where the description is served, and that it can be switched off. */
class IdempotencyOpenApiAutoConfigurationTest {
    private final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(IdempotencyOpenApiAutoConfiguration.class));

    @Test
    void servedOnTheDefaultPath() {
        runner.run(context -> {
            WebTestClient client = WebTestClient.bindToRouterFunction(context.getBean(RouterFunction.class)).build();
            client.get().uri("/idempotency/openapi.yaml").exchange()
                    .expectStatus().isOk()
                    .expectHeader().contentType("application/yaml")
                    .expectBody(String.class).value(yaml -> assertThat(yaml).startsWith("openapi: 3.1.0"));
        });
    }

    @Test
    void thePathIsConfigurable() {
        runner.withPropertyValues("idempotency.openapi.path=/docs/gateway-errors.yaml").run(context -> {
            WebTestClient client = WebTestClient.bindToRouterFunction(context.getBean(RouterFunction.class)).build();
            client.get().uri("/docs/gateway-errors.yaml").exchange().expectStatus().isOk();
            client.get().uri("/idempotency/openapi.yaml").exchange().expectStatus().isNotFound();
        });
    }

    @Test
    void canBeSwitchedOff() {
        runner.withPropertyValues("idempotency.openapi.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(RouterFunction.class));
    }
}
