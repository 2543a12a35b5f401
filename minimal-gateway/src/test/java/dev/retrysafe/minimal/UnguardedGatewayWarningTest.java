package dev.retrysafe.minimal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.cloud.gateway.event.RefreshRoutesEvent;
import org.springframework.cloud.gateway.event.RefreshRoutesResultEvent;
import org.springframework.cloud.gateway.filter.FilterDefinition;
import org.springframework.cloud.gateway.handler.predicate.PredicateDefinition;
import org.springframework.cloud.gateway.route.RouteDefinition;
import org.springframework.cloud.gateway.route.RouteDefinitionWriter;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.Ordered;
import reactor.core.publisher.Mono;
import redis.embedded.RedisServer;

/**
 * A gateway with the library and no guarded route says so once, when its routes are loaded (a jar started away
 * from its configuration would otherwise forward every write unguarded and look healthy), and again only when a
 * refresh removes the last guarded route; one with a guarded route says nothing.
 */
@ExtendWith(OutputCaptureExtension.class)
class UnguardedGatewayWarningTest {
    static final String WARNING = "No route uses the Idempotency filter";
    static final String ROUTE = "--spring.cloud.gateway.server.webflux.routes[0].";
    static final RedisServer redis = LocalRedis.start();

    @AfterAll
    static void stop() throws IOException {
        redis.stop();
    }

    @Test
    void aGatewayWithNoGuardedRouteWarnsOnceAndAgainWhenARefreshRemovesTheLastGuardedOne(CapturedOutput output) {
        RefreshCount refreshes = new RefreshCount();
        try (ConfigurableApplicationContext gateway = start(refreshes, ROUTE + "id=plain",
                ROUTE + "uri=http://127.0.0.1:1", ROUTE + "predicates[0]=Path=/plain/**")) {
            refreshes.reach(1);
            assertThat(warnings(output)).as("after startup").isEqualTo(1);

            refresh(gateway, refreshes);
            assertThat(warnings(output)).as("a refresh that leaves it unguarded says nothing new").isEqualTo(1);

            RouteDefinitionWriter routes = gateway.getBean(RouteDefinitionWriter.class);
            routes.save(Mono.just(guardedRoute())).block(Duration.ofSeconds(30));
            refresh(gateway, refreshes);
            assertThat(warnings(output)).as("after a guarded route was added").isEqualTo(1);

            routes.delete(Mono.just("guarded")).block(Duration.ofSeconds(30));
            refresh(gateway, refreshes);
            assertThat(warnings(output)).as("after the last guarded route was removed").isEqualTo(2);
        }
    }

    @Test
    void aGatewayWithAGuardedRouteDoesNotWarn(CapturedOutput output) {
        RefreshCount refreshes = new RefreshCount();
        try (ConfigurableApplicationContext gateway = start(refreshes, ROUTE + "id=guarded",
                ROUTE + "uri=http://127.0.0.1:1", ROUTE + "predicates[0]=Path=/merchants/**",
                ROUTE + "filters[0].name=Idempotency")) {
            refreshes.reach(1);
            assertThat(warnings(output)).isZero();
        }
    }

    private static ConfigurableApplicationContext start(RefreshCount refreshes, String... routeArgs) {
        SpringApplication application = new SpringApplication(MinimalGatewayApplication.class);
        application.addListeners(refreshes);
        String[] args = new String[routeArgs.length + 2];
        System.arraycopy(routeArgs, 0, args, 0, routeArgs.length);
        args[routeArgs.length] = "--server.port=0";
        args[routeArgs.length + 1] = "--spring.data.redis.port=" + redis.ports().get(0);
        return application.run(args);
    }

    private static void refresh(ConfigurableApplicationContext gateway, RefreshCount refreshes) {
        int before = refreshes.count.get();
        gateway.publishEvent(new RefreshRoutesEvent(UnguardedGatewayWarningTest.class));
        refreshes.reach(before + 1);
    }

    private static RouteDefinition guardedRoute() {
        RouteDefinition route = new RouteDefinition();
        route.setId("guarded");
        route.setUri(URI.create("http://127.0.0.1:1"));
        route.setPredicates(List.of(new PredicateDefinition("Path=/merchants/**")));
        route.setFilters(List.of(new FilterDefinition("Idempotency")));
        return route;
    }

    private static long warnings(CapturedOutput output) {
        return output.getOut().lines().filter(line -> line.contains(WARNING)).count();
    }

    /** Refreshes judged: it hears each result after the warning's listener (lowest precedence), on the same thread. */
    static final class RefreshCount implements ApplicationListener<RefreshRoutesResultEvent>, Ordered {
        final AtomicInteger count = new AtomicInteger();

        @Override
        public void onApplicationEvent(RefreshRoutesResultEvent event) {
            assertThat(event.isSuccess()).as("route refresh").isTrue();
            count.incrementAndGet();
        }

        @Override
        public int getOrder() {
            return Ordered.LOWEST_PRECEDENCE;
        }

        void reach(int atLeast) {
            await().atMost(Duration.ofSeconds(60)).until(() -> count.get() >= atLeast);
        }
    }
}
