package dev.retrysafe.gateway.idempotency.filter;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.gateway.event.RefreshRoutesResultEvent;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.OrderedGatewayFilter;
import org.springframework.cloud.gateway.route.Route;
import org.springframework.cloud.gateway.route.RouteLocator;
import org.springframework.context.ApplicationListener;
import org.springframework.core.Ordered;

/**
 * A gateway with the library but no route using the {@code Idempotency} filter forwards every write unguarded
 * and still looks healthy (a jar started away from its configuration, a misspelt filter name): say so in one
 * WARN. Judged on the routes Spring Cloud Gateway actually built, after each refresh; it warns when the gateway
 * becomes unguarded (at startup, or a refresh that removes the last guarded route), not again on every refresh
 * that leaves it so.
 */
public final class UnguardedGatewayWarning implements ApplicationListener<RefreshRoutesResultEvent>, Ordered {
    private static final Logger log = LoggerFactory.getLogger(UnguardedGatewayWarning.class);
    static final String MESSAGE = "No route uses the Idempotency filter: every request is forwarded unguarded. "
            + "Routes come from spring.cloud.gateway.server.webflux.routes; was the configuration loaded? A jar "
            + "started away from its config/ directory reads none. See docs/getting-started.md, "
            + "\"Where the configuration comes from\"";

    // null until the first refresh is judged; then whether the routes had a guarded one.
    private final AtomicReference<Boolean> guarded = new AtomicReference<>();

    @Override
    public void onApplicationEvent(RefreshRoutesResultEvent event) {
        if (!event.isSuccess() || !(event.getSource() instanceof RouteLocator locator)) {
            return; // Spring Cloud Gateway logs its own refresh errors
        }
        // The locator has cached the routes before it publishes the event: this reads that list, it fetches nothing.
        locator.getRoutes().any(UnguardedGatewayWarning::isGuarded).subscribe(this::judge,
                error -> log.debug("Could not read the routes to see whether one is guarded", error));
    }

    private void judge(boolean nowGuarded) {
        Boolean before = guarded.getAndSet(nowGuarded);
        if (!nowGuarded && !Boolean.FALSE.equals(before)) {
            log.warn(MESSAGE);
        }
    }

    static boolean isGuarded(Route route) {
        List<GatewayFilter> filters = route.getFilters();
        return filters.stream().anyMatch(UnguardedGatewayWarning::isIdempotency);
    }

    private static boolean isIdempotency(GatewayFilter filter) {
        GatewayFilter unwrapped = filter;
        while (unwrapped instanceof OrderedGatewayFilter ordered) {
            unwrapped = ordered.getDelegate();
        }
        return unwrapped instanceof IdempotencyGatewayFilter;
    }

    /** Before other listeners of the same event, so that one reading the log after it sees this refresh judged. */
    @Override
    public int getOrder() {
        return 0;
    }
}
