package dev.retrysafe.gateway.idempotency.filter;

import java.util.Optional;

/**
 * A route's {@code Idempotency} filter cannot be built from its settings. Names the route, the setting (the route
 * arg's name, which is also the {@code idempotency.*} default's), whether the route set it or the default applied,
 * and the rule it breaks, so that the startup failure can say all of that in one short message.
 */
public final class InvalidRouteSetting extends IllegalArgumentException {
    private final String routeId;
    private final Optional<String> setting;
    private final boolean setOnRoute;
    private final String rule;

    InvalidRouteSetting(String routeId, Optional<String> setting, boolean setOnRoute, String rule) {
        super("Route '" + routeId + "': " + rule);
        this.routeId = routeId;
        this.setting = setting;
        this.setOnRoute = setOnRoute;
        this.rule = rule;
    }

    public String routeId() {
        return routeId;
    }

    /** The arg's name (kebab-case), when the rule names one. */
    public Optional<String> setting() {
        return setting;
    }

    /** The route set the arg itself; otherwise the value is the {@code idempotency.*} default. */
    public boolean setOnRoute() {
        return setOnRoute;
    }

    public String rule() {
        return rule;
    }
}
