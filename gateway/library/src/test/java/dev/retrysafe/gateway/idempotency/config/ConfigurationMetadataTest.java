package dev.retrysafe.gateway.idempotency.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The configuration metadata this module generates, what an IDE completes {@code idempotency.*} from: every property
 * carries a description and its default. One added without them fails here, named.
 */
class ConfigurationMetadataTest {
    /**
     * Properties without a default, because leaving them unset is a setting of its own; their descriptions say what
     * unset means (they contain "Unset").
     */
    static final Set<String> UNSET_BY_DEFAULT = Set.of(
            "idempotency.tenant-header", // only an authenticated principal names the tenant
            "idempotency.unordered-arrays", // every array's order counts
            "idempotency.encryption.keys", // no keys
            "idempotency.encryption.active-key"); // records are not encrypted

    @Test
    void everyPropertyHasADescriptionAndADefault() throws IOException {
        Map<String, JsonNode> properties = properties(metadata());
        assertThat(properties).as("idempotency.* properties in the metadata").containsKey("idempotency.key-header");
        assertThat(offenders(properties, UNSET_BY_DEFAULT)).isEmpty();
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
                offenders.add(name + ": listed as unset by default, but has the default " + property.get("defaultValue"));
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
