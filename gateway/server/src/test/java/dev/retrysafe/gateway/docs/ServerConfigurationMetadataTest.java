package dev.retrysafe.gateway.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.embedded.EmbeddedRedisProperties;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The runnable server's own {@code idempotency.*} properties in the metadata it generates carry a description and
 * their default, as the library's do (its ConfigurationMetadataTest holds the same rules).
 */
class ServerConfigurationMetadataTest {
    /** Unset is a setting of its own; their descriptions say what it means (they contain "Unset"). */
    static final Set<String> UNSET_BY_DEFAULT = Set.of(
            "idempotency.operator.password", // the operator API and console are closed
            "idempotency.api-keys.keys", // no keys (refused at startup while api-keys are enabled)
            "idempotency.embedded-redis.directory"); // worked out at startup from java.io.tmpdir

    @Test
    void everyPropertyOfTheServerHasADescriptionAndADefault() throws IOException {
        List<String> offenders = new ArrayList<>();
        int properties = 0;
        for (JsonNode property : metadata().path("properties")) {
            String name = property.path("name").asString();
            if (!name.startsWith("idempotency.")) {
                continue;
            }
            properties++;
            String description = property.path("description").asString("");
            boolean unset = UNSET_BY_DEFAULT.contains(name);
            if (description.isBlank()) {
                offenders.add(name + ": no description (javadoc of its field, or @param of its record component)");
            } else if (description.contains("{@")) {
                offenders.add(name + ": javadoc markup in its description, which IDEs show as written");
            }
            if (!property.has("defaultValue") && !unset) {
                offenders.add(name + ": no default (@DefaultValue; or, when unset is a setting of its own, list it as "
                        + "unset by default and say in its description what unset means)");
            }
            if (property.has("defaultValue") && isCollection(property)
                    && !property.get("defaultValue").isArray()) {
                offenders.add(name + ": its default " + property.get("defaultValue") + " is not a JSON array: give "
                        + "it in META-INF/additional-spring-configuration-metadata.json");
            }
            if (unset && property.has("defaultValue")) {
                offenders.add(name + ": listed as unset by default, but has the default "
                        + property.get("defaultValue"));
            }
            if (unset && !description.toLowerCase(Locale.ROOT).contains("unset")) {
                offenders.add(name + ": unset by default, but its description does not say what unset means");
            }
        }
        assertThat(properties).as("the server's idempotency.* properties").isPositive();
        assertThat(offenders).isEmpty();
    }

    static boolean isCollection(JsonNode property) {
        String type = property.path("type").asString("");
        return type.startsWith("java.util.List<") || type.startsWith("java.util.Set<")
                || type.startsWith("java.util.Collection<") || type.endsWith("[]");
    }

    /** The server's own file, next to its classes; the library's, also on the class path, is the library's. */
    static JsonNode metadata() throws IOException {
        URL classes = EmbeddedRedisProperties.class.getProtectionDomain().getCodeSource().getLocation();
        try (InputStream in = new URL(classes, "META-INF/spring-configuration-metadata.json").openStream()) {
            return JsonMapper.builder().build().readTree(in);
        }
    }
}
