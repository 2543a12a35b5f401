package dev.retrysafe.loadtests.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.ByteBufFlux;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;

/**
 * Drives the same load, in one run, against the backend directly, the plain route, the idempotent route with first
 * writes and the idempotent route with replays; writes a Markdown and a JSON table. Three loads: light (a few
 * connections, closed loop), saturation (many connections, closed loop) and a fixed rate of half the plain route's
 * saturation throughput (open loop: latency counted from when each request was due, so queueing shows).
 */
public final class LoadDriver {
    static final String BODY = """
            {"legalName":"Panadería Sol","taxId":"SOL1234567","email":"pagos@sol.example",
             "address":{"street":"Av. Siempre Viva 742","city":"Bogotá","country":"CO"},
             "integrations":[{"type":"ERP","name":"sap"},{"type":"CRM","name":"hubspot"}],
             "paymentMethods":["CARD","PIX","PSE"],"sites":["https://sol.example","https://tienda.sol.example"],
             "settings":{"currency":"COP","notifications":{"email":true,"sms":false},"settlementDays":2}}""";

    record Target(String name, String url, Supplier<String> keys) {
    }

    record Result(String target, String load, int connections, double rate, double throughput, double p50, double p99,
            double p999, long ok, long errors) {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = options(args);
        int durationSeconds = Integer.parseInt(options.getOrDefault("duration", "8"));
        int warmupSeconds = Integer.parseInt(options.getOrDefault("warmup", "40"));
        int light = Integer.parseInt(options.getOrDefault("light", "4"));
        int heavy = Integer.parseInt(options.getOrDefault("heavy", "32"));
        Path out = Path.of(options.getOrDefault("out", "load-tests/target/benchmark"));
        Duration duration = Duration.ofSeconds(durationSeconds);

        HttpClient http = HttpClient.create(ConnectionProvider.builder("bench").maxConnections(2048)
                .pendingAcquireMaxCount(-1).build());
        if (options.containsKey("first-writes-only")) {
            firstWritesOnly(http, options.get("label"), options.get("first-writes-only"), warmupSeconds, light, heavy,
                    duration, out.resolve(options.get("name") + ".md"));
            return;
        }
        List<String> replayKeys = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            replayKeys.add(UUID.randomUUID().toString());
        }
        AtomicInteger nextReplay = new AtomicInteger();
        Supplier<String> fresh = () -> UUID.randomUUID().toString();
        List<Target> targets = new ArrayList<>(List.of(
                new Target("backend direct", options.get("backend"), fresh),
                new Target("plain route", options.get("plain"), fresh),
                new Target("idempotent, first writes", options.get("guarded"), fresh),
                new Target("idempotent, replays", options.get("guarded"),
                        () -> replayKeys.get(Math.floorMod(nextReplay.getAndIncrement(), replayKeys.size())))));

        System.out.printf("Warm-up %d s on every target (the JIT compiler competes for the cores until it settles)%n",
                warmupSeconds);
        for (String key : replayKeys) {
            send(http, targets.get(2).url(), key).block();
        }
        Duration warmupEach = Duration.ofSeconds(Math.max(1, warmupSeconds / targets.size()));
        for (Target target : targets) {
            closedLoop(http, target, heavy, warmupEach);
        }

        List<Result> results = new ArrayList<>();
        for (Target target : targets) {
            results.add(report(closedLoop(http, target, light, duration)));
        }
        for (Target target : targets) {
            results.add(report(closedLoop(http, target, heavy, duration)));
        }
        double plainSaturation = results.stream()
                .filter(r -> r.target().equals("plain route") && r.connections() == heavy)
                .findFirst().orElseThrow().throughput();
        double rate = Math.max(10, plainSaturation / 2);
        for (Target target : targets) {
            results.add(report(fixedRate(http, target, rate, duration)));
        }
        write(out, results, options, plainSaturation);
    }

    /**
     * First writes against one gateway alone, after its own warm-up: for settings that need a gateway of their
     * own (replica-acks), each measured in a fresh JVM with nothing else running, and appended as table rows.
     */
    private static void firstWritesOnly(HttpClient http, String label, String url, int warmupSeconds, int light,
            int heavy, Duration duration, Path rows) throws IOException {
        Supplier<String> fresh = () -> UUID.randomUUID().toString();
        Target target = new Target(label, url, fresh);
        closedLoop(http, target, heavy, Duration.ofSeconds(warmupSeconds));
        StringBuilder md = new StringBuilder();
        for (int connections : List.of(light, heavy)) {
            Result r = report(closedLoop(http, target, connections, duration));
            md.append(String.format(Locale.ROOT, "| %s | %s | %.0f | %.2f | %.2f | %.2f | %d |%n", r.target(),
                    r.load(), r.throughput(), r.p50(), r.p99(), r.p999(), r.errors()));
        }
        Files.createDirectories(rows.getParent());
        Files.writeString(rows, md, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }

    private static Result report(Result result) {
        System.out.printf(Locale.ROOT, "%-26s %-22s %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  p99.9 %7.2f ms  errors %d%n",
                result.target(), result.load(), result.throughput(), result.p50(), result.p99(), result.p999(),
                result.errors());
        return result;
    }

    /** {@code connections} loops, each sending its next request as soon as the previous one is answered. */
    static Result closedLoop(HttpClient http, Target target, int connections, Duration duration) {
        Recorder latencies = new Recorder(3);
        AtomicLong ok = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        long end = System.nanoTime() + duration.toNanos();
        long start = System.nanoTime();
        Flux.range(0, connections)
                .flatMap(loop -> Mono.defer(() -> timed(http, target, System.nanoTime(), latencies, ok, errors))
                        .repeat(() -> System.nanoTime() < end), connections)
                .blockLast();
        double seconds = (System.nanoTime() - start) / 1e9;
        return result(target, "closed, " + connections + " conn", connections, 0, latencies.getIntervalHistogram(),
                ok.get(), errors.get(), seconds);
    }

    /** Requests due at a fixed rate whatever the answers do; each latency counts from when it was due. */
    static Result fixedRate(HttpClient http, Target target, double rate, Duration duration) {
        Recorder latencies = new Recorder(3);
        AtomicLong ok = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        long total = (long) (rate * duration.toSeconds());
        long start = System.nanoTime() + 1_000_000;
        double interval = 1e9 / rate;
        AtomicLong sent = new AtomicLong();
        Flux.interval(Duration.ofMillis(1)).onBackpressureDrop()
                .takeWhile(tick -> sent.get() < total)
                .concatMapIterable(tick -> {
                    long now = System.nanoTime();
                    List<Long> due = new ArrayList<>();
                    while (sent.get() < total && start + (long) (sent.get() * interval) <= now) {
                        due.add(start + (long) (sent.getAndIncrement() * interval));
                    }
                    return due;
                })
                .flatMap(dueAt -> timed(http, target, dueAt, latencies, ok, errors), 4096)
                .blockLast();
        double seconds = (System.nanoTime() - start) / 1e9;
        return result(target, String.format(Locale.ROOT, "fixed %.0f req/s", rate), 0, rate,
                latencies.getIntervalHistogram(), ok.get(), errors.get(), seconds);
    }

    private static Mono<Void> timed(HttpClient http, Target target, long startedAt, Recorder latencies, AtomicLong ok,
            AtomicLong errors) {
        return send(http, target.url(), target.keys().get())
                .doOnNext(status -> {
                    latencies.recordValue(Math.max(1, (System.nanoTime() - startedAt) / 1000));
                    if (status >= 200 && status < 300) {
                        ok.incrementAndGet();
                    } else {
                        errors.incrementAndGet();
                    }
                })
                .onErrorResume(e -> {
                    errors.incrementAndGet();
                    return Mono.empty();
                })
                .then();
    }

    static Mono<Integer> send(HttpClient http, String url, String key) {
        return http.headers(h -> h.set("Content-Type", "application/json").set("Idempotency-Key", key))
                .post().uri(url)
                .send(ByteBufFlux.fromString(Mono.just(BODY)))
                .responseSingle((response, body) -> body.asByteArray().defaultIfEmpty(new byte[0])
                        .map(bytes -> response.status().code()));
    }

    private static Result result(Target target, String load, int connections, double rate, Histogram histogram,
            long ok, long errors, double seconds) {
        return new Result(target.name(), load, connections, rate, (ok + errors) / seconds,
                histogram.getValueAtPercentile(50) / 1000.0, histogram.getValueAtPercentile(99) / 1000.0,
                histogram.getValueAtPercentile(99.9) / 1000.0, ok, errors);
    }

    private static void write(Path out, List<Result> results, Map<String, String> options, double plainSaturation)
            throws IOException {
        Files.createDirectories(out);
        String machine = Runtime.getRuntime().availableProcessors() + " cores, "
                + Runtime.getRuntime().maxMemory() / (1024 * 1024) + " MB max heap (driver), Java "
                + System.getProperty("java.version") + ", " + System.getProperty("os.name") + " "
                + System.getProperty("os.arch");
        String date = ZonedDateTime.now().withNano(0).toString();
        StringBuilder md = new StringBuilder();
        md.append("Benchmark of ").append(date).append(" on ").append(machine).append(".\n\n");
        md.append("| Target | Load | Throughput (req/s) | vs plain | p50 (ms) | +p50 vs plain | p99 (ms) | +p99 vs plain | p99.9 (ms) | Errors |\n");
        md.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        StringBuilder json = new StringBuilder("{\n  \"date\": \"" + date + "\",\n  \"machine\": \"" + machine
                + "\",\n  \"plainSaturationThroughput\": " + Math.round(plainSaturation) + ",\n  \"results\": [\n");
        for (int i = 0; i < results.size(); i++) {
            Result r = results.get(i);
            Result plain = results.stream().filter(p -> p.target().equals("plain route") && p.load().equals(r.load()))
                    .findFirst().orElse(r);
            md.append(String.format(Locale.ROOT, "| %s | %s | %.0f | %.0f%% | %.2f | %+.2f | %.2f | %+.2f | %.2f | %d |%n",
                    r.target(), r.load(), r.throughput(), 100 * r.throughput() / plain.throughput(), r.p50(),
                    r.p50() - plain.p50(), r.p99(), r.p99() - plain.p99(), r.p999(), r.errors()));
            json.append(String.format(Locale.ROOT,
                    "    {\"target\": \"%s\", \"load\": \"%s\", \"throughput\": %.1f, \"ratioToPlain\": %.3f, "
                            + "\"p50Ms\": %.3f, \"p99Ms\": %.3f, \"p999Ms\": %.3f, \"ok\": %d, \"errors\": %d}%s%n",
                    r.target(), r.load(), r.throughput(), r.throughput() / plain.throughput(), r.p50(), r.p99(),
                    r.p999(), r.ok(), r.errors(), i + 1 < results.size() ? "," : ""));
        }
        json.append("  ]\n}\n");
        Files.writeString(out.resolve("benchmark.md"), md, StandardCharsets.UTF_8);
        Files.writeString(out.resolve("benchmark.json"), json, StandardCharsets.UTF_8);
        System.out.println();
        System.out.println(md);
        System.out.println("Written: " + out.resolve("benchmark.md") + " and " + out.resolve("benchmark.json"));
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            options.put(arg.substring(2, eq), arg.substring(eq + 1));
        }
        return options;
    }
}
