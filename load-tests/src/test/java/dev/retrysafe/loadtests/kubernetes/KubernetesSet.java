package dev.retrysafe.loadtests.kubernetes;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.Yaml;

/**
 * deploy/kubernetes/ and gateway/server/Dockerfile as a kubelet would read them: the gateway container's image
 * instructions, its spec in the Deployment, the ConfigMap it mounts, the Service and the PodDisruptionBudget.
 */
@SuppressWarnings("unchecked")
record KubernetesSet(Map<String, Object> deployment, Map<String, Object> service, Map<String, Object> budget,
        Map<String, Object> configMap, List<String> dockerfile) {
    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    static final Path DOCKERFILE = ROOT.resolve("gateway/server/Dockerfile");
    private static final Pattern INSTRUCTION = Pattern.compile("^([A-Z]+)\\s+(.*)$");

    static KubernetesSet read() {
        try {
            return new KubernetesSet(document("deployment.yaml", "Deployment"), document("service.yaml", "Service"),
                    document("poddisruptionbudget.yaml", "PodDisruptionBudget"),
                    document("configmap.yaml", "ConfigMap"), Files.readAllLines(DOCKERFILE));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Map<String, Object> document(String file, String kind) throws IOException {
        Map<String, Object> document = new Yaml().load(Files.readString(ROOT.resolve("deploy/kubernetes").resolve(file)));
        if (!kind.equals(document.get("kind"))) {
            throw new IllegalStateException(file + " is a " + document.get("kind") + ", not a " + kind);
        }
        return document;
    }

    static Map<String, Object> map(Map<String, Object> from, String... path) {
        Object value = from;
        for (String step : path) {
            value = ((Map<String, Object>) value).get(step);
            if (value == null) {
                throw new IllegalStateException("nothing at " + String.join(".", path));
            }
        }
        return (Map<String, Object>) value;
    }

    static List<Map<String, Object>> list(Map<String, Object> from, String key) {
        return (List<Map<String, Object>>) from.getOrDefault(key, List.of());
    }

    Map<String, Object> podSpec() {
        return map(deployment, "spec", "template", "spec");
    }

    Map<String, Object> container() {
        List<Map<String, Object>> containers = list(podSpec(), "containers");
        if (containers.size() != 1) {
            throw new IllegalStateException("one container expected, found " + containers.size());
        }
        return containers.get(0);
    }

    /** The container's port numbers by name. */
    Map<String, Integer> containerPorts() {
        Map<String, Integer> ports = new java.util.LinkedHashMap<>();
        list(container(), "ports").forEach(port -> ports.put((String) port.get("name"), (Integer) port.get("containerPort")));
        return ports;
    }

    /** The container's port a probe or a targetPort names, by name or number. */
    int containerPort(Object nameOrNumber) {
        return nameOrNumber instanceof Integer number ? number : containerPorts().get((String) nameOrNumber);
    }

    /** The application.yml the ConfigMap carries, as text (what the volume mount puts in the file). */
    String configMapFile(String name) {
        return (String) map(configMap, "data").get(name);
    }

    /** The arguments of every Dockerfile instruction of this name, in order (continuation lines are not used). */
    List<String> instructions(String name) {
        List<String> found = new ArrayList<>();
        for (String line : dockerfile) {
            Matcher matcher = INSTRUCTION.matcher(line.strip());
            if (matcher.matches() && matcher.group(1).equals(name)) {
                found.add(matcher.group(2).strip());
            }
        }
        return found;
    }

    /** The last instruction of this name, which is the one that counts. */
    String instruction(String name) {
        List<String> found = instructions(name);
        if (found.isEmpty()) {
            throw new IllegalStateException("the Dockerfile has no " + name);
        }
        return found.get(found.size() - 1);
    }

    /** ENTRYPOINT in exec form (a JSON array), which is also a YAML flow sequence; null when in shell form. */
    List<String> entrypoint() {
        String entrypoint = instruction("ENTRYPOINT");
        return entrypoint.startsWith("[") ? new Yaml().load(entrypoint) : null;
    }
}
