package dev.retrysafe.loadtests.gatling;

import static io.gatling.javaapi.http.HttpDsl.http;

import io.gatling.javaapi.http.HttpProtocolBuilder;
import java.time.Duration;

/**
 * What every simulation reads from system properties, so that a load tester can point the scenarios at any gateway.
 *
 * <ul>
 *   <li>{@code baseUrl} - the gateway, e.g. {@code http://localhost:8080} (the Maven plugin passes
 *       {@code -Dgatling.baseUrl=...} as {@code -DbaseUrl=...}; {@code gatling.baseUrl} is read too);</li>
 *   <li>{@code path} - the guarded write route, default {@code /merchants};</li>
 *   <li>{@code tenant} - optional, sent as {@code X-Tenant-Id} (the gateway's {@code idempotency.tenant-header});</li>
 *   <li>{@code smoke=true} - a few seconds and a handful of users, for the build's smoke run;</li>
 *   <li>{@code users}, {@code durationSeconds}, {@code rampSeconds}, {@code pauseMillis}, {@code maxP99Millis} -
 *       the size of a run; each simulation documents its own extra knobs.</li>
 * </ul>
 */
public final class LoadSettings {

    /** Header names and the gateway's fixed texts, as documented in docs/reference/responses.md. */
    public static final String KEY_HEADER = "Idempotency-Key";
    public static final String REPLAYED_HEADER = "Idempotency-Replayed";
    public static final String TENANT_HEADER = "X-Tenant-Id";
    public static final String MISMATCH_MESSAGE = "The idempotency key was already used with a different payload.";

    public final String baseUrl;
    public final String path;
    public final String tenant;
    public final boolean smoke;

    private LoadSettings() {
        baseUrl = stripTrailingSlash(text("baseUrl", text("gatling.baseUrl", "http://localhost:8080")));
        path = text("path", "/merchants");
        tenant = text("tenant", "");
        smoke = Boolean.parseBoolean(text("smoke", "false"));
    }

    public static LoadSettings load() {
        return new LoadSettings();
    }

    /** An integer property, with one default for real runs and one for the smoke run. */
    public int integer(String name, int realDefault, int smokeDefault) {
        String value = text(name, "");
        return value.isEmpty() ? (smoke ? smokeDefault : realDefault) : Integer.parseInt(value);
    }

    public Duration seconds(String name, int realDefault, int smokeDefault) {
        return Duration.ofSeconds(integer(name, realDefault, smokeDefault));
    }

    /** Think time between two requests of one virtual user; 0 means none (a closed loop at full speed). */
    public Duration pause() {
        return Duration.ofMillis(integer("pauseMillis", 0, 50));
    }

    /** Latency guard on top of the correctness assertions: 99th percentile of all requests. */
    public int maxP99Millis() {
        return integer("maxP99Millis", 5_000, 15_000);
    }

    public HttpProtocolBuilder protocol() {
        HttpProtocolBuilder protocol = http.baseUrl(baseUrl)
                .acceptHeader("application/json")
                .contentTypeHeader("application/json")
                .userAgentHeader("retrysafe-gatling")
                // Gatling's default warm-up calls https://gatling.io; warm up on the target (any answer will do).
                .warmUp(baseUrl + path);
        if (!tenant.isEmpty()) {
            protocol = protocol.header(TENANT_HEADER, tenant);
        }
        return protocol;
    }

    public String describe(String simulation, String sizing) {
        return simulation + " -> " + baseUrl + path + (tenant.isEmpty() ? "" : " (tenant " + tenant + ")")
                + (smoke ? " [smoke]" : "") + ": " + sizing;
    }

    private static String text(String name, String fallback) {
        String value = System.getProperty(name);
        return value == null || value.isBlank() ? fallback : value.trim();
    }

    private static String stripTrailingSlash(String url) {
        return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    }
}
