package dev.retrysafe.gateway.idempotency.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.filter.IdempotencyGatewayFilterFactory;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.net.URL;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The configuration metadata this module generates, what an IDE completes {@code idempotency.*} from: every property
 * carries a description and its default, and so does every arg of the {@code Idempotency} route filter, published as
 * the documentation-only entry {@code idempotency.route-args.<arg>}. One added without them fails here, named.
 */
class ConfigurationMetadataTest {
    static final String ROUTE_ARGS = "idempotency.route-args.";

    /**
     * Properties without a default, because leaving them unset is a setting of its own; their descriptions say what
     * unset means (they contain "Unset").
     */
    static final Set<String> UNSET_BY_DEFAULT = Set.of(
            "idempotency.tenant-header", // only an authenticated principal names the tenant
            "idempotency.unordered-arrays", // every array's order counts
            "idempotency.encryption.keys", // no keys
            "idempotency.encryption.active-key", // records are not encrypted
            ROUTE_ARGS + "unordered-arrays", // as idempotency.unordered-arrays
            ROUTE_ARGS + "fingerprint-ignore", // the whole body is the intent
            ROUTE_ARGS + "fingerprint-headers", // no header is
            ROUTE_ARGS + "process-status-uri", // no process tracking
            ROUTE_ARGS + "reconcile-uri", // UNCERTAIN records wait for an operator
            ROUTE_ARGS + "reconcile-after", // worked out per route, from its response timeout
            ROUTE_ARGS + "reconcile-headers", // lookups carry no header of the route's own
            ROUTE_ARGS + "reconcile-forward-headers", // nor any of the original request
            ROUTE_ARGS + "operation"); // the route id

    @Test
    void everyPropertyHasADescriptionAndADefault() throws IOException {
        Map<String, JsonNode> properties = properties(metadata());
        assertThat(properties).as("idempotency.* properties in the metadata").containsKey("idempotency.key-header");
        properties.keySet().removeIf(name -> name.startsWith(ROUTE_ARGS));
        assertThat(offenders(properties, UNSET_BY_DEFAULT.stream().filter(name -> !name.startsWith(ROUTE_ARGS))
                .collect(Collectors.toSet()))).isEmpty();
    }

    /**
     * Route args are map keys under a route's filter, which the metadata format cannot describe; each one has an entry
     * {@code idempotency.route-args.<arg>} of its own type, deprecated at level error (not bound: the IDE flags it,
     * SettingsCheck refuses it), whose default is that of the {@code idempotency.*} property it falls back to and whose
     * replacement is that property.
     */
    @Test
    void everyRouteArgHasADocumentationEntryWithItsDescriptionDefaultAndType() throws IOException {
        Map<String, JsonNode> properties = properties(metadata());
        Map<String, Type> args = routeArgs();
        assertThat(args).as("route args of the Idempotency filter's Config").containsKey("key-header");
        List<String> offenders = new ArrayList<>();
        args.forEach((arg, type) -> {
            JsonNode entry = properties.get(ROUTE_ARGS + arg);
            if (entry == null) {
                offenders.add(ROUTE_ARGS + arg + ": missing; route arg " + arg + " needs it in "
                        + "META-INF/additional-spring-configuration-metadata.json");
                return;
            }
            if (!entry.path("type").asString("").equals(type.getTypeName())) {
                offenders.add(ROUTE_ARGS + arg + ": type " + entry.path("type") + ", but the arg is a " + type);
            }
            if (!entry.path("deprecation").path("level").asString("").equals("error")) {
                offenders.add(ROUTE_ARGS + arg + ": not deprecated at level error, so it would pass for a property");
            }
            JsonNode fallback = properties.get("idempotency." + arg);
            String replacement = entry.path("deprecation").path("replacement").asString(null);
            if (fallback != null && !fallback.path("defaultValue").equals(entry.path("defaultValue"))) {
                offenders.add(ROUTE_ARGS + arg + ": default " + entry.path("defaultValue") + ", but it falls back to "
                        + "idempotency." + arg + ", whose default is " + fallback.path("defaultValue"));
            }
            if (fallback != null ? !("idempotency." + arg).equals(replacement) : replacement != null) {
                offenders.add(ROUTE_ARGS + arg + ": replacement " + replacement + ", but the property it falls back "
                        + "to is " + (fallback != null ? "idempotency." + arg : "none"));
            }
        });
        properties.keySet().stream().filter(name -> name.startsWith(ROUTE_ARGS))
                .filter(name -> !args.containsKey(name.substring(ROUTE_ARGS.length())))
                .forEach(name -> offenders.add(name + ": the Idempotency filter has no such arg"));
        Map<String, JsonNode> entries = new LinkedHashMap<>(properties);
        entries.keySet().removeIf(name -> !name.startsWith(ROUTE_ARGS));
        offenders.addAll(offenders(entries, UNSET_BY_DEFAULT.stream().filter(name -> name.startsWith(ROUTE_ARGS))
                .collect(Collectors.toSet())));
        assertThat(offenders).isEmpty();
    }

    /** Every arg the filter binds, kebab-case, with its type: Config's setters, as Spring Cloud Gateway binds them. */
    static Map<String, Type> routeArgs() {
        Map<String, Type> args = new TreeMap<>();
        for (Method method : IdempotencyGatewayFilterFactory.Config.class.getMethods()) {
            if (method.getName().startsWith("set") && method.getParameterCount() == 1
                    && !method.getName().equals("setRouteId")) {
                String arg = method.getName().substring(3).replaceAll("([a-z0-9])([A-Z])", "$1-$2")
                        .toLowerCase(Locale.ROOT);
                args.put(arg, method.getGenericParameterTypes()[0]);
            }
        }
        return args;
    }

    /** Each property lacking a description or a default, with what it lacks. */
    static List<String> offenders(Map<String, JsonNode> properties, Set<String> unsetByDefault) {
        List<String> offenders = new ArrayList<>();
        properties.forEach((name, property) -> {
            String description = property.path("description").asString("");
            if (description.isBlank()) {
                offenders.add(name + ": no description (javadoc of its field, or @param of its record component)");
            } else if (description.contains("{@")) {
                offenders.add(name + ": javadoc markup in its description, which IDEs show as written");
            }
            boolean hasDefault = property.has("defaultValue");
            if (!hasDefault && !unsetByDefault.contains(name)) {
                offenders.add(name + ": no default (@DefaultValue; or, when unset is a setting of its own, list it as "
                        + "unset by default and say in its description what unset means)");
            }
            if (hasDefault && isCollection(property) && !property.get("defaultValue").isArray()) {
                offenders.add(name + ": its default " + property.get("defaultValue") + " is not a JSON array (the "
                        + "processor writes a @DefaultValue of several values as one string): give it in "
                        + "META-INF/additional-spring-configuration-metadata.json");
            }
            if (unsetByDefault.contains(name) && hasDefault) {
                offenders.add(name + ": listed as unset by default, but has the default "
                        + property.get("defaultValue"));
            }
            if (unsetByDefault.contains(name) && !description.toLowerCase(Locale.ROOT).contains("unset")) {
                offenders.add(name + ": unset by default, but its description does not say what unset means");
            }
        });
        unsetByDefault.stream().filter(name -> !properties.containsKey(name))
                .forEach(name -> offenders.add(name + ": listed as unset by default, but no such property"));
        return offenders;
    }

    static boolean isCollection(JsonNode property) {
        String type = property.path("type").asString("");
        return type.startsWith("java.util.List<") || type.startsWith("java.util.Set<")
                || type.startsWith("java.util.Collection<") || type.endsWith("[]");
    }

    /** The {@code idempotency.*} properties by name. */
    static Map<String, JsonNode> properties(JsonNode metadata) {
        Map<String, JsonNode> properties = new LinkedHashMap<>();
        for (JsonNode property : metadata.path("properties")) {
            String name = property.path("name").asString();
            if (name.startsWith("idempotency.")) {
                properties.put(name, property);
            }
        }
        return properties;
    }

    /** This module's own generated file, next to its classes; other modules' on the class path are theirs. */
    static JsonNode metadata() throws IOException {
        URL classes = IdempotencyProperties.class.getProtectionDomain().getCodeSource().getLocation();
        try (InputStream in = new URL(classes, "META-INF/spring-configuration-metadata.json").openStream()) {
            return JsonMapper.builder().build().readTree(in);
        }
    }
}
