package dev.retrysafe.loadtests.kubernetes;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The gateway container as the Deployment describes it, without a container runtime: the image's files under a
 * temporary root (the built jar where the Dockerfile copies it, each ConfigMap volume's files where it is mounted),
 * the Dockerfile's ENTRYPOINT (or the Deployment's command) with the Deployment's args, run from the image's WORKDIR,
 * with the Deployment's environment. What a test machine cannot give as is, and only that, stands in: every
 * {@code *_PORT} value becomes a free port (so the numbers the probes name are translated through {@link #port}),
 * named environment values (Redis, the upstream) and secrets come from the test, {@code java} is this JVM's.
 */
final class PodProcess implements AutoCloseable {
    private final Process process;
    private final Map<Integer, Integer> ports;
    private final Path log;

    private PodProcess(Process process, Map<Integer, Integer> ports, Path log) {
        this.process = process;
        this.ports = ports;
        this.log = log;
    }

    /**
     * @param replaced environment values the test gives instead of the Deployment's (by variable name)
     * @param secrets  values of secretKeyRef variables (by variable name); a missing optional one is left unset
     */
    static PodProcess start(KubernetesSet set, Path jar, Path root, Map<String, String> replaced,
            Map<String, String> secrets, String name) throws IOException {
        Map<String, Object> container = set.container();
        String jarInImage = copiedJar(set);
        link(root.resolve(jarInImage.substring(1)), jar);
        mountConfigMaps(set, container, root);

        Map<Integer, Integer> ports = new HashMap<>();
        Map<String, String> environment = new HashMap<>();
        for (Map<String, Object> variable : KubernetesSet.list(container, "env")) {
            String variableName = (String) variable.get("name");
            if (variable.containsKey("valueFrom")) {
                if (secrets.containsKey(variableName)) {
                    environment.put(variableName, secrets.get(variableName));
                }
                continue;
            }
            String value = String.valueOf(variable.get("value"));
            if (variableName.endsWith("_PORT")) {
                int free = freePort();
                ports.put(Integer.parseInt(value), free);
                value = Integer.toString(free);
            }
            environment.put(variableName, replaced.getOrDefault(variableName, value));
        }

        List<String> command = new ArrayList<>();
        @SuppressWarnings("unchecked")
        List<Object> given = (List<Object>) container.getOrDefault("command", set.entrypoint());
        @SuppressWarnings("unchecked")
        List<Object> args = (List<Object>) container.getOrDefault("args", List.of());
        List<Object> all = new ArrayList<>(given);
        all.addAll(args);
        for (Object part : all) {
            String text = String.valueOf(part);
            if (text.equals("java")) {
                text = ProcessHandle.current().info().command().orElse("java");
            } else if (text.startsWith("/") && Files.exists(root.resolve(text.substring(1)))) {
                text = root.resolve(text.substring(1)).toString();
            }
            command.add(text);
        }
        Path workdir = root.resolve(set.instruction("WORKDIR").substring(1));
        Files.createDirectories(workdir);
        Path log = Path.of("target", name + ".log").toAbsolutePath();
        ProcessBuilder builder = new ProcessBuilder(command).directory(workdir.toFile())
                .redirectErrorStream(true).redirectOutput(log.toFile());
        // A container starts with only its image's and its spec's environment, not this test's.
        builder.environment().keySet().removeIf(key -> !key.equals("PATH") && !key.equals("HOME"));
        builder.environment().putAll(environment);
        return new PodProcess(builder.start(), ports, log);
    }

    /** Where the Dockerfile's COPY puts the server jar, checked to be the one ENTRYPOINT runs. */
    static String copiedJar(KubernetesSet set) {
        String[] copy = set.instruction("COPY").split("\\s+");
        return copy[copy.length - 1];
    }

    private static void mountConfigMaps(KubernetesSet set, Map<String, Object> container, Path root)
            throws IOException {
        for (Map<String, Object> mount : KubernetesSet.list(container, "volumeMounts")) {
            Map<String, Object> volume = KubernetesSet.list(set.podSpec(), "volumes").stream()
                    .filter(candidate -> candidate.get("name").equals(mount.get("name"))).findFirst().orElseThrow();
            Path directory = root.resolve(((String) mount.get("mountPath")).substring(1));
            Files.createDirectories(directory);
            if (volume.containsKey("configMap")) {
                String configMap = (String) KubernetesSet.map(volume, "configMap").get("name");
                if (!configMap.equals(KubernetesSet.map(set.configMap(), "metadata").get("name"))) {
                    throw new IllegalStateException("the volume mounts ConfigMap " + configMap + ", not ours");
                }
                for (Map.Entry<String, Object> file : KubernetesSet.map(set.configMap(), "data").entrySet()) {
                    Files.writeString(directory.resolve(file.getKey()), (String) file.getValue());
                }
            }
        }
    }

    private static void link(Path at, Path target) throws IOException {
        Files.createDirectories(at.getParent());
        Files.deleteIfExists(at);
        Files.createSymbolicLink(at, target);
    }

    /** The port this test reaches for a port number the manifests name. */
    int port(int inPod) {
        Integer port = ports.get(inPod);
        if (port == null) {
            throw new IllegalStateException("no *_PORT variable in the Deployment says the gateway listens on " + inPod);
        }
        return port;
    }

    Process process() {
        return process;
    }

    String log() throws IOException {
        return Files.readString(log);
    }

    /** Waits at most {@code timeout} for the process to end; true when it has. */
    boolean awaitExit(Duration timeout) throws InterruptedException {
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * The process as a failure message needs it: running or its exit code, and the end of its log (a JVM that
     * exited says why there, or says nothing when it was killed).
     */
    String describe() {
        String state = process.isAlive() ? "still running" : "exited with " + process.exitValue();
        String tail;
        try {
            List<String> lines = Files.readAllLines(log);
            tail = String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            tail = "(its log " + log + " could not be read: " + e + ")";
        }
        return "the gateway (pid " + process.pid() + ") is " + state + threadDump() + "; the end of " + log + ":\n"
                + tail;
    }

    /** A running gateway's threads (jcmd Thread.print) in a file beside its log: where an unanswered request waits. */
    private String threadDump() {
        if (!process.isAlive()) {
            return "";
        }
        Path dump = log.resolveSibling(log.getFileName().toString().replace(".log", "")
                + "-threads-" + System.currentTimeMillis() + ".txt");
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        try {
            Process print = new ProcessBuilder(jcmd.toString(), Long.toString(process.pid()), "Thread.print")
                    .redirectErrorStream(true).redirectOutput(dump.toFile()).start();
            if (!print.waitFor(30, TimeUnit.SECONDS)) {
                print.destroyForcibly();
                return " (jcmd Thread.print did not finish within 30 s)";
            }
            return " (its threads: " + dump + ")";
        } catch (IOException e) {
            return " (no thread dump: " + e + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    boolean listening(int inPod) {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port(inPod))) {
            return true;
        } catch (IOException notYet) {
            return false;
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @Override
    public void close() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not gone 30 s after SIGKILL: " + describe());
        }
    }
}
