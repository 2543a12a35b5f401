package dev.retrysafe.gateway.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.filter.IdempotencyGatewayFilterFactory;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * docs/reference/configuration.md against what the build knows: every {@code idempotency.*} property in the
 * configuration metadata the library and the server generate is documented, and every documented one exists; the
 * same for the {@code Idempotency} filter's route args against its {@code Config}.
 */
class ConfigurationReferenceTest {
    static final Path REFERENCE = Path.of("../../docs/reference/configuration.md");
    // A table row's first cell: one name in backticks.
    static final Pattern FIRST_CELL = Pattern.compile("^\\| `([^`]+)` \\|", Pattern.MULTILINE);

    @Test
    void everyPropertyIsDocumentedAndEveryDocumentedPropertyExists() throws IOException {
        Set<String> known = metadataProperties();
        assertThat(known).as("metadata of library and server").contains("idempotency.key-min-length",
                "idempotency.embedded-redis.enabled");
        Set<String> documented = documentedNames().stream().filter(name -> name.startsWith("idempotency."))
                .map(ConfigurationReferenceTest::metadataName).collect(Collectors.toCollection(TreeSet::new));
        assertThat(difference(known, documented)).as("properties missing from " + REFERENCE).isEmpty();
        assertThat(difference(documented, known)).as("documented in " + REFERENCE + " but no such property").isEmpty();
    }

    @Test
    void everyRouteArgIsDocumentedAndEveryDocumentedArgExists() throws IOException {
        Set<String> args = Arrays.stream(IdempotencyGatewayFilterFactory.Config.class.getMethods())
                .map(Method::getName)
                .filter(name -> name.startsWith("set") && !name.equals("setRouteId"))
                .map(name -> kebab(name.substring(3)))
                .collect(Collectors.toCollection(TreeSet::new));
        Set<String> documented = documentedNames().stream().filter(name -> !name.contains("."))
                .collect(Collectors.toCollection(TreeSet::new));
        assertThat(documented).isEqualTo(args);
    }

    /** {@code idempotency.encryption.keys.<id>} is the map {@code idempotency.encryption.keys}; {@code [n]} a list. */
    static String metadataName(String documented) {
        return documented.replaceAll("\\.<[^>]+>$", "").replaceAll("\\[n\\].*$", "");
    }

    static Set<String> documentedNames() throws IOException {
        Matcher rows = FIRST_CELL.matcher(Files.readString(REFERENCE));
        Set<String> names = new TreeSet<>();
        while (rows.find()) {
            names.add(rows.group(1));
        }
        return names;
    }

    static Set<String> metadataProperties() throws IOException {
        JsonMapper json = JsonMapper.builder().build();
        Set<String> names = new TreeSet<>();
        List<URL> files = Collections.list(ConfigurationReferenceTest.class.getClassLoader()
                .getResources("META-INF/spring-configuration-metadata.json"));
        for (URL file : files) {
            try (InputStream in = file.openStream()) {
                for (JsonNode property : json.readTree(in).path("properties")) {
                    String name = property.path("name").asString();
                    // Deprecated at level error: not bound, like the route args' idempotency.route-args.* entries,
                    // documented as route args.
                    boolean bound = !property.path("deprecation").path("level").asString("").equals("error");
                    if (name.startsWith("idempotency.") && bound) {
                        names.add(name);
                    }
                }
            }
        }
        return names;
    }

    private static Set<String> difference(Set<String> a, Set<String> b) {
        Set<String> out = new TreeSet<>(a);
        out.removeAll(b);
        return out;
    }

    private static String kebab(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(java.util.Locale.ROOT);
    }
}
