package dev.retrysafe.gateway.idempotency.config;

import dev.retrysafe.gateway.idempotency.filter.IdempotencyGatewayFilterFactory;
import dev.retrysafe.gateway.idempotency.filter.RouteDefaults;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.cloud.gateway.filter.FilterDefinition;
import org.springframework.cloud.gateway.route.RouteDefinition;
import org.springframework.core.env.Environment;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Fails the startup on settings nobody reads: an {@code idempotency.*} property that is not one (a typo would
 * otherwise leave the default in force, silently), or an arg the {@code Idempotency} route filter does not have;
 * and on a route whose filter cannot be built from its args and the defaults. The valid names come from the
 * configuration metadata the build generates, so a property is known exactly when it is documented; environment
 * variables are not checked (other programs' variables may share the prefix). Runs before any bean is created:
 * nothing connects to Redis, and Spring Cloud Gateway does not get to log a route it could not build.
 */
final class SettingsCheck implements BeanFactoryPostProcessor {
    static final ConfigurationPropertyName PREFIX = ConfigurationPropertyName.of("idempotency");
    static final String ROUTES = "spring.cloud.gateway.server.webflux.routes";
    static final String DEFAULT_FILTERS = "spring.cloud.gateway.server.webflux.default-filters";
    static final String FILTER_NAME = "Idempotency";
    /** Documentation-only entries of the route args in the metadata (an IDE cannot key them by route). */
    static final String ROUTE_ARGS_DOCUMENTATION = "idempotency.route-args.";

    private final Environment environment;

    SettingsCheck(Environment environment) {
        this.environment = environment;
    }

    @Override
    public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
        Optional<Routes> routes = routes();
        if (environment.getProperty("idempotency.fail-on-unknown-settings", Boolean.class, true)) {
            List<UnknownSetting> unknown = new ArrayList<>(unknownProperties());
            routes.ifPresent(declared -> unknown.addAll(unknownRouteArgs(declared)));
            if (!unknown.isEmpty()) {
                throw new UnknownSettings(unknown);
            }
        }
        routes.ifPresent(this::checkRouteValues);
    }

    /** The routes and default filters as declared in properties, bound once for both checks. */
    record Routes(List<RouteDefinition> routes, List<FilterDefinition> defaultFilters) {
    }

    /** Empty when they do not bind: Spring Cloud Gateway reports its own route errors, and says it better. */
    Optional<Routes> routes() {
        Binder binder = Binder.get(environment);
        try {
            return Optional.of(new Routes(
                    binder.bind(ROUTES, Bindable.listOf(RouteDefinition.class)).orElse(List.of()),
                    binder.bind(DEFAULT_FILTERS, Bindable.listOf(FilterDefinition.class)).orElse(List.of())));
        } catch (RuntimeException unbindable) {
            return Optional.empty();
        }
    }

    /** Builds every Idempotency route's policy as the filter factory will: a rule broken is InvalidRouteSetting. */
    void checkRouteValues(Routes declared) {
        RouteDefaults defaults;
        try {
            defaults = Binder.get(environment).bindOrCreate("idempotency", IdempotencyProperties.class);
        } catch (RuntimeException unbindable) {
            return; // Spring Boot's own binding failure, reported when the beans are created, says it better
        }
        for (RouteDefinition route : declared.routes()) {
            for (FilterDefinition filter : route.getFilters()) {
                check(defaults, filter, route.getId());
            }
            if (route.getFilters().stream().noneMatch(filter -> FILTER_NAME.equals(filter.getName()))) {
                for (FilterDefinition filter : declared.defaultFilters()) {
                    check(defaults, filter, route.getId());
                }
            }
        }
    }

    private static void check(RouteDefaults defaults, FilterDefinition filter, String routeId) {
        if (!FILTER_NAME.equals(filter.getName())) {
            return;
        }
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        Map<String, Object> args = new LinkedHashMap<>(filter.getArgs());
        args.keySet().removeIf(key -> key.startsWith("_genkey_"));
        try {
            new Binder(new MapConfigurationPropertySource(args)).bind(ConfigurationPropertyName.EMPTY,
                    Bindable.ofInstance(config));
        } catch (RuntimeException unbindable) {
            return; // a value of the wrong type: Spring Cloud Gateway's binding reports it
        }
        config.setRouteId(routeId);
        IdempotencyGatewayFilterFactory.checkedPolicy(defaults, config);
    }

    List<UnknownSetting> unknownProperties() {
        Map<String, Boolean> known = new LinkedHashMap<>();
        Map<ConfigurationPropertyName, String> unbound = new LinkedHashMap<>();
        readMetadata(known, unbound);
        if (known.isEmpty()) {
            return List.of(); // no metadata on the class path (a repackaged jar that dropped it): nothing to hold to
        }
        List<ConfigurationPropertyName> exact = new ArrayList<>();
        List<ConfigurationPropertyName> containers = new ArrayList<>();
        known.forEach((name, container) -> (container ? containers : exact).add(ConfigurationPropertyName.of(name)));
        Map<String, UnknownSetting> found = new LinkedHashMap<>();
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
            if (source.getUnderlyingSource() instanceof SystemEnvironmentPropertySource
                    || !(source instanceof IterableConfigurationPropertySource iterable)) {
                continue;
            }
            iterable.stream().filter(PREFIX::isAncestorOf).forEach(name -> {
                boolean isKnown = exact.contains(name) || containers.contains(name)
                        || containers.stream().anyMatch(container -> container.isAncestorOf(name));
                if (!isKnown && !found.containsKey(name.toString())) {
                    ConfigurationProperty property = source.getConfigurationProperty(name);
                    String where = property != null && property.getOrigin() != null
                            ? property.getOrigin().toString() : String.valueOf(source.getUnderlyingSource());
                    Optional<String> meant = unbound.containsKey(name) ? Optional.of(unbound.get(name))
                            : NearestName.to(name.toString(), known.keySet());
                    found.put(name.toString(), new UnknownSetting(name.toString(), where, meant));
                }
            });
        }
        return List.copyOf(found.values());
    }

    List<UnknownSetting> unknownRouteArgs(Routes declared) {
        Set<String> args = routeArgs();
        List<UnknownSetting> found = new ArrayList<>();
        List<RouteDefinition> routes = declared.routes();
        for (int r = 0; r < routes.size(); r++) {
            RouteDefinition route = routes.get(r);
            check(route.getFilters(), "route '" + route.getId() + "' (" + ROUTES + "[" + r + "])", args, found);
        }
        check(declared.defaultFilters(), DEFAULT_FILTERS, args, found);
        return found;
    }

    private static void check(List<FilterDefinition> filters, String where, Set<String> args,
            List<UnknownSetting> found) {
        for (FilterDefinition filter : filters) {
            if (!FILTER_NAME.equals(filter.getName())) {
                continue;
            }
            for (String key : filter.getArgs().keySet()) {
                if (key.startsWith("_genkey_")) {
                    continue; // a shortcut arg: positional, not named
                }
                String arg = key.replaceAll("[.\\[].*$", "");
                if (!args.contains(uniform(arg))) {
                    found.add(new UnknownSetting("arg " + arg + " of the " + FILTER_NAME + " filter", where,
                            NearestName.to(arg, kebabRouteArgs())));
                }
            }
        }
    }

    /** Route args in the binder's uniform form: lower case, no dashes ("keyMinLength" and "key-min-length" alike). */
    private static Set<String> routeArgs() {
        Set<String> args = new TreeSet<>();
        for (String arg : kebabRouteArgs()) {
            args.add(uniform(arg));
        }
        return args;
    }

    static Set<String> kebabRouteArgs() {
        Set<String> args = new TreeSet<>();
        for (Method method : IdempotencyGatewayFilterFactory.Config.class.getMethods()) {
            if (method.getName().startsWith("set") && method.getParameterCount() == 1
                    && !method.getName().equals("setRouteId")) {
                args.add(method.getName().substring(3).replaceAll("([a-z0-9])([A-Z])", "$1-$2")
                        .toLowerCase(Locale.ROOT));
            }
        }
        return args;
    }

    private static String uniform(String name) {
        return name.replace("-", "").toLowerCase(Locale.ROOT);
    }

    /**
     * Fills {@code known} with each property's name and whether it holds a map or a collection (then any name below
     * it is its own). Entries deprecated at level error are not bound (so Spring Boot's metadata format defines
     * them); among them the documentation-only {@code idempotency.route-args.*} go to {@code unbound}, each with what
     * was meant.
     */
    private static void readMetadata(Map<String, Boolean> known, Map<ConfigurationPropertyName, String> unbound) {
        JsonMapper json = JsonMapper.builder().build();
        ClassLoader loader = Optional.ofNullable(Thread.currentThread().getContextClassLoader())
                .orElse(SettingsCheck.class.getClassLoader());
        try {
            for (URL file : Collections.list(loader.getResources("META-INF/spring-configuration-metadata.json"))) {
                try (InputStream in = file.openStream()) {
                    for (JsonNode property : json.readTree(in).path("properties")) {
                        String name = property.path("name").asString();
                        if (!name.startsWith("idempotency.")) {
                            continue;
                        }
                        if (property.path("deprecation").path("level").asString("").equals("error")) {
                            if (name.startsWith(ROUTE_ARGS_DOCUMENTATION)) {
                                unbound.put(ConfigurationPropertyName.of(name), routeArgMeant(name, property));
                            }
                        } else {
                            String type = property.path("type").asString("");
                            known.put(name, type.contains("Map<") || type.contains("List<") || type.contains("Set<")
                                    || type.contains("Collection<") || type.endsWith("[]"));
                        }
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Could not read the configuration metadata", e);
        }
    }

    /** "the route arg retention (under the Idempotency filter's args), or idempotency.retention for every route" */
    private static String routeArgMeant(String name, JsonNode property) {
        String replacement = property.path("deprecation").path("replacement").asString(null);
        return "the route arg " + name.substring(ROUTE_ARGS_DOCUMENTATION.length()) + " (under the " + FILTER_NAME
                + " filter's args)" + (replacement != null ? ", or " + replacement + " for every route" : "");
    }
}
