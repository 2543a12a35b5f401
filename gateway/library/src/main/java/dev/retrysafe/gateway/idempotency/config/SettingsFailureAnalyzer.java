package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.filter.InvalidRouteSetting;
import dev.retrysafe.gateway.idempotency.store.redis.EvictingRedis;
import java.util.stream.Collectors;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.env.Environment;

/**
 * A mistake in the idempotency settings in one short screen: which setting, its value, the rule it breaks and where
 * it was written (or the name nearest to a misspelt one), instead of pages of stack traces.
 */
public final class SettingsFailureAnalyzer implements FailureAnalyzer {
    static final String REFERENCE = "Every setting, its default and its rule: docs/reference/configuration.md.";

    private final Environment environment;

    public SettingsFailureAnalyzer(Environment environment) {
        this.environment = environment;
    }

    @Override
    public FailureAnalysis analyze(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof UnknownSettings unknown) {
                return unknown(unknown);
            }
            if (cause instanceof InvalidRouteSetting invalid) {
                return invalid(invalid);
            }
            if (cause instanceof EvictingRedis evicting) {
                return evicting(evicting);
            }
        }
        return null;
    }

    private static FailureAnalysis unknown(UnknownSettings failure) {
        String list = failure.settings().stream().map(setting -> "  " + setting.describe())
                .collect(Collectors.joining("\n"));
        return new FailureAnalysis("Settings that nothing reads (they would be ignored, and the defaults used):\n"
                + list, "Correct or remove them. " + REFERENCE, failure);
    }

    private static FailureAnalysis evicting(EvictingRedis failure) {
        String masters = failure.policies().entrySet().stream().sorted(java.util.Map.Entry.comparingByKey())
                .map(master -> "  Redis " + master.getKey() + ": maxmemory-policy " + master.getValue())
                .collect(Collectors.joining("\n"));
        return new FailureAnalysis("Redis evicts keys when its memory is full, and would silently forget idempotency "
                + "records: a retry of a request whose record was evicted is forwarded again.\n" + masters
                + "\n  (The volatile-* policies evict them too: every record has a TTL. Managed Redis services "
                + "default to volatile-lru.)",
                "Set maxmemory-policy to noeviction on every master: CONFIG SET maxmemory-policy noeviction (and in "
                        + "redis.conf, or CONFIG REWRITE, to keep it across restarts); on a managed Redis, in its "
                        + "parameter group. When Redis is full, guarded requests are then refused with 503 instead. "
                        + "Or accept the risk: idempotency.store.allow-eviction=true. See docs/operations/redis.md.",
                failure);
    }

    private FailureAnalysis invalid(InvalidRouteSetting failure) {
        StringBuilder description = new StringBuilder("The Idempotency filter of route '")
                .append(failure.routeId()).append("' cannot start: ").append(failure.rule()).append('.');
        String action;
        if (failure.setting().isEmpty()) {
            action = "Correct the route's Idempotency args or the idempotency.* properties. " + REFERENCE;
        } else if (failure.setOnRoute()) {
            description.append("\n  Set on the route: arg ").append(failure.setting().get())
                    .append(" of its Idempotency filter.");
            action = "Correct the arg " + failure.setting().get() + " on route '" + failure.routeId() + "'. "
                    + REFERENCE;
        } else {
            String property = "idempotency." + failure.setting().get();
            description.append("\n  From the default: ").append(property).append(" = ")
                    .append(environment.getProperty(property, "(its default)"))
                    .append(origin(property).map(origin -> " (" + origin + ")").orElse(""));
            action = "Correct " + property + ", or set the arg " + failure.setting().get() + " on the route. "
                    + REFERENCE;
        }
        return new FailureAnalysis(description.toString(), action, failure);
    }

    private java.util.Optional<String> origin(String property) {
        ConfigurationPropertyName name = ConfigurationPropertyName.of(property);
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
            ConfigurationProperty found = source.getConfigurationProperty(name);
            if (found != null && found.getOrigin() != null) {
                return java.util.Optional.of(found.getOrigin().toString());
            }
        }
        return java.util.Optional.empty();
    }
}
