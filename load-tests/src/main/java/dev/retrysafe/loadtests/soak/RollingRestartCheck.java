package dev.retrysafe.loadtests.soak;

import dev.retrysafe.loadtests.soak.RollingRestartVerdict.Record;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The checks at the end of load-tests/rolling-restart.sh: reads the upstream's write log and the keys the load sent,
 * looks each key's record up through the operator API, waits (up to {@code waitSeconds}) for records still in
 * flight and processes still pending to settle, lists the fleet's unsettled records, and prints the
 * {@link RollingRestartVerdict}. Exit status 0 when every invariant held, 1 when one broke, 2 on bad arguments.
 *
 * <pre>
 * java -cp ... dev.retrysafe.loadtests.soak.RollingRestartCheck writes=backend-writes.tsv keys=keys.txt \
 *     operator=http://localhost:19191 user=operator:soak route=onboarding-merchants waitSeconds=120
 * </pre>
 */
public final class RollingRestartCheck {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int PARALLEL_LOOKUPS = 16;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String operator;
    private final String authorization;
    private final String route;

    RollingRestartCheck(String operator, String user, String route) {
        this.operator = operator.endsWith("/") ? operator.substring(0, operator.length() - 1) : operator;
        this.authorization = "Basic " + Base64.getEncoder().encodeToString(user.getBytes(StandardCharsets.UTF_8));
        this.route = route;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        for (String arg : args) {
            int equals = arg.indexOf('=');
            if (equals < 1) {
                System.err.println("arguments are name=value: writes= keys= operator= user= route= waitSeconds=");
                System.exit(2);
            }
            options.put(arg.substring(0, equals), arg.substring(equals + 1));
        }
        for (String required : List.of("writes", "keys", "operator", "user", "route")) {
            if (!options.containsKey(required)) {
                System.err.println("missing " + required + "=");
                System.exit(2);
            }
        }
        Set<String> sent = new LinkedHashSet<>();
        for (String line : Files.readAllLines(Path.of(options.get("keys")))) {
            if (!line.isBlank()) {
                sent.add(line.trim());
            }
        }
        Map<String, List<String>> writes = writesByKey(Files.readAllLines(Path.of(options.get("writes"))));
        RollingRestartCheck check = new RollingRestartCheck(options.get("operator"), options.get("user"),
                options.get("route"));
        Duration wait = Duration.ofSeconds(Long.parseLong(options.getOrDefault("waitSeconds", "120")));

        long started = System.nanoTime();
        Map<String, Optional<Record>> records = check.lookUp(sent);
        long deadline = started + wait.toNanos();
        List<String> settling = unsettledOrPending(records);
        while (!settling.isEmpty() && System.nanoTime() < deadline) {
            System.out.printf("rolling-restart check: %d record(s) still in flight or with a process pending, "
                    + "looking again in 2 s%n", settling.size());
            Thread.sleep(2000);
            records.putAll(check.lookUp(settling));
            settling = unsettledOrPending(records);
        }
        List<String> unsettled = check.unsettledScopes();
        RollingRestartVerdict verdict = RollingRestartVerdict.judge(sent, writes, records, unsettled);
        System.out.printf("rolling-restart check: %d records looked up in %.1f s%n", records.size(),
                (System.nanoTime() - started) / 1e9);
        System.out.print(verdict.report());
        System.exit(verdict.held() ? 0 : 1);
    }

    /** The write log's lines ({@code ms TAB method TAB path TAB key TAB processId}): process ids per key. */
    static Map<String, List<String>> writesByKey(List<String> lines) {
        Map<String, List<String>> writes = new LinkedHashMap<>();
        for (String line : lines) {
            String[] fields = line.split("\t", -1);
            if (fields.length != 5) {
                continue;
            }
            writes.computeIfAbsent(fields[3], key -> new ArrayList<>()).add(fields[4]);
        }
        return writes;
    }

    private static List<String> unsettledOrPending(Map<String, Optional<Record>> records) {
        List<String> keys = new ArrayList<>();
        records.forEach((key, record) -> {
            if (record.isPresent() && ("IN_FLIGHT".equals(record.get().state())
                    || record.get().processId() != null && !"ENDED".equals(record.get().processState()))) {
                keys.add(key);
            }
        });
        return keys;
    }

    Map<String, Optional<Record>> lookUp(Iterable<String> keys) throws InterruptedException {
        Map<String, Optional<Record>> found = new ConcurrentHashMap<>();
        Semaphore permits = new Semaphore(PARALLEL_LOOKUPS);
        List<CompletableFuture<?>> lookups = new ArrayList<>();
        for (String key : keys) {
            permits.acquire();
            HttpRequest request = get("/actuator/idempotency?route=" + encode(route) + "&key=" + encode(key));
            lookups.add(http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
                    .thenAccept(response -> found.put(key, record(key, response)))
                    .whenComplete((ignored, error) -> permits.release()));
        }
        CompletableFuture.allOf(lookups.toArray(CompletableFuture[]::new)).join();
        return found;
    }

    private static Optional<Record> record(String key, HttpResponse<String> response) {
        if (response.statusCode() == 404) {
            return Optional.empty();
        }
        if (response.statusCode() != 200) {
            throw new IllegalStateException("looking up key " + key + ": " + response.statusCode() + " "
                    + response.body());
        }
        JsonNode view = JSON.readTree(response.body());
        return Optional.of(new Record(view.path("state").asString(), view.path("status").asInt(0),
                view.hasNonNull("processId") ? view.get("processId").asString() : null,
                view.hasNonNull("processState") ? view.get("processState").asString() : null));
    }

    /** The operator list, which reads the index of unsettled records: IN_FLIGHT of any age and UNCERTAIN. */
    List<String> unsettledScopes() throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(get("/actuator/idempotency?state=IN_FLIGHT,UNCERTAIN"
                + "&inFlightOlderThanSeconds=0&limit=1000"), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException("listing unsettled records: " + response.statusCode() + " "
                    + response.body());
        }
        List<String> scopes = new ArrayList<>();
        JSON.readTree(response.body()).path("records").forEach(record -> scopes.add(record.path("scopeHash").asString()));
        return scopes;
    }

    private HttpRequest get(String pathAndQuery) {
        return HttpRequest.newBuilder(URI.create(operator + pathAndQuery)).timeout(Duration.ofSeconds(15))
                .header("Authorization", authorization).GET().build();
    }

    private static String encode(String text) {
        return URLEncoder.encode(text, StandardCharsets.UTF_8);
    }
}
