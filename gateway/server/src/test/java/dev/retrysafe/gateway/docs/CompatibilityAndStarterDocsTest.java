package dev.retrysafe.gateway.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * The README's first screen against the build: the starter coordinates it tells a newcomer to add are the starter
 * module's, and the compatibility table names the Spring Boot and Spring Cloud versions the parent POM builds with.
 */
class CompatibilityAndStarterDocsTest {
    static final Path README = Path.of("../../README.md");
    static final Path PARENT_POM = Path.of("../../pom.xml");
    static final Path STARTER_POM = Path.of("../starter/pom.xml");

    @Test
    void theReadmesStarterDependencyIsTheStarterModule() throws Exception {
        Element starter = pom(STARTER_POM);
        Element parent = child(starter, "parent");
        Matcher dependency = Pattern.compile("<dependency>\\s*<groupId>([^<]+)</groupId>\\s*"
                + "<artifactId>([^<]*spring-boot-starter)</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(Files.readString(README));
        assertThat(dependency.find()).as("a starter <dependency> in " + README).isTrue();
        assertThat(dependency.group(1)).isEqualTo(text(parent, "groupId"));
        assertThat(dependency.group(2)).isEqualTo(text(starter, "artifactId"));
        assertThat(dependency.group(3)).isEqualTo(text(parent, "version"));
    }

    @Test
    void theReadmesFirstScreenNamesTheStarter() throws Exception {
        Element starter = pom(STARTER_POM);
        Element parent = child(starter, "parent");
        String readme = Files.readString(README);
        String firstScreen = readme.substring(0, readme.indexOf("\n## "));
        assertThat(firstScreen).as("the README before its first section")
                .contains("`" + text(parent, "groupId") + ":" + text(starter, "artifactId") + ":"
                        + text(parent, "version") + "`")
                .contains("[Apache-2.0](LICENSE)")
                .contains("| compatible with | version |");
    }

    @Test
    void theCompatibilityTableNamesTheVersionsTheBuildUses() throws Exception {
        Element pom = pom(PARENT_POM);
        String boot = text(child(pom, "parent"), "version");
        String cloud = text(child(pom, "properties"), "spring-cloud.version");
        String readme = Files.readString(README);
        assertThat(row(readme, "Spring Boot")).isEqualTo(line(boot) + " (built with " + boot + ")");
        assertThat(row(readme, "Spring Cloud")).startsWith(line(cloud) + " (built with " + cloud + ")");
        assertThat(row(readme, "Java")).startsWith(text(child(pom, "properties"), "java.version") + " ");
    }

    /** 4.0.7 is the 4.0.x line. */
    private static String line(String version) {
        return version.replaceAll("^(\\d+\\.\\d+)\\..*$", "$1.x");
    }

    private static String row(String readme, String name) {
        Matcher row = Pattern.compile("^\\| " + Pattern.quote(name) + " \\| ([^|]+) \\|$", Pattern.MULTILINE)
                .matcher(readme);
        assertThat(row.find()).as("a compatibility row for " + name + " in " + README).isTrue();
        return row.group(1).trim();
    }

    private static Element pom(Path file) throws Exception {
        Document document = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(file.toFile());
        return document.getDocumentElement();
    }

    /** The direct child of that name (a POM's own groupId, not a dependency's). */
    private static Element child(Element parent, String name) {
        for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element element && element.getTagName().equals(name)) {
                return element;
            }
        }
        throw new AssertionError("no <" + name + "> in <" + parent.getTagName() + ">");
    }

    private static String text(Element parent, String name) {
        return child(parent, name).getTextContent().trim();
    }
}
