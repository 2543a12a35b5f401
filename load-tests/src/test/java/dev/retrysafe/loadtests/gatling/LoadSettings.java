package dev.retrysafe.loadtests.gatling;

import static io.gatling.javaapi.http.HttpDsl.http;

import io.gatling.javaapi.core.Session;
import io.gatling.javaapi.http.HttpProtocolBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * What every simulation reads from system properties, so that a load tester can point the scenarios at any gateway.
 *
 * <ul>
 *   <li>{@code baseUrl} - the gateway, e.g. {@code http://localhost:8080} (the Maven plugin passes
 *       {@code -Dgatling.baseUrl=...} as {@code -DbaseUrl=...}; {@code gatling.baseUrl} is read too);</li>
 *   <li>{@code baseUrls} - several gateway instances, comma-separated: each request goes to the next one in turn
 *       (a {@link Rotation}); {@code baseUrl} is then the first of them;</li>
 *   <li>{@code rotationFile} - with {@code baseUrls}: a file naming the instances in service, one per line, re-read
 *       as it changes (a rolling restart takes an instance out before stopping it);</li>
 *   <li>{@code path} - the guarded write route, default {@code /merchants};</li>
 *   <li>{@code tenant} - optional, sent as {@code X-Tenant-Id} (the gateway's {@code idempotency.tenant-header});</li>
 *   <li>{@code profile} - the size of a run: {@code laptop} (default: the whole local stack on 2 cores stays
 *       unsaturated), {@code ci} (small and short) or {@code soak} (long and steady); {@code smoke=true} is the
 *       build's smoke run (a few seconds, a handful of users). Each simulation documents what each profile sends;
 *       an explicit knob ({@code -Dusers=...}, {@code -DdurationSeconds=...}) overrides its profile's value;</li>
 *   <li>{@code maxP99Millis} - only when given: the run fails when the 99th percentile of all requests is not below
 *       it. Without it latency is reported, never asserted;</li>
 *   <li>{@code maxUnavailablePercent} - only when given: the run fails when more than this share of the requests
 *       were not served (503 store unavailable, a 409 refusing a same-payload request to retry later, no answer).
 *       Without it they are reported as overload.</li>
 * </ul>
 */
public final class LoadSettings {

    /** Header names and the gateway's fixed texts, as documented in docs/reference/responses.md. */
    public static final String KEY_HEADER = "Idempotency-Key";
    public static final String REPLAYED_HEADER = "Idempotency-Replayed";
    public static final String RETRY_AFTER_HEADER = "Retry-After";
    public static final String TENANT_HEADER = "X-Tenant-Id";
    public static final String MISMATCH_MESSAGE = "The idempotency key was already used with a different payload.";

    /** The named sizes of a run; {@link #SMOKE} is chosen by {@code -Dsmoke=true}. */
    public enum Profile {
        LAPTOP, CI, SOAK, SMOKE;

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }

        static Profile parse(String text) {
            for (Profile profile : values()) {
                if (profile.label().equalsIgnoreCase(text.trim())) {
                    return profile;
                }
            }
            throw new IllegalArgumentException("Unknown -Dprofile=" + text + ": use one of "
                    + Arrays.stream(values()).map(Profile::label).collect(Collectors.joining(", ")));
        }
    }

    public final String baseUrl;
    /** The instances requests rotate over; null with a single {@link #baseUrl}. */
    public final Rotation rotation;
    public final String path;
    public final String tenant;
    public final Profile profile;

    private LoadSettings() {
        String baseUrls = text("baseUrls", "");
        if (baseUrls.isEmpty()) {
            rotation = null;
            baseUrl = stripTrailingSlash(text("baseUrl", text("gatling.baseUrl", "http://localhost:8080")));
        } else {
            String file = text("rotationFile", "");
            rotation = Rotation.of(Arrays.stream(baseUrls.split(",")).map(String::trim).filter(url -> !url.isEmpty())
                    .toList(), file.isEmpty() ? null : Path.of(file));
            baseUrl = rotation.instances().get(0);
        }
        path = text("path", "/merchants");
        tenant = text("tenant", "");
        profile = Boolean.parseBoolean(text("smoke", "false")) ? Profile.SMOKE : Profile.parse(text("profile", "laptop"));
    }

    public static LoadSettings load() {
        return new LoadSettings();
    }

    /** An integer property: the one given with {@code -Dname=}, else the value of the run's profile. */
    public int integer(String name, int laptop, int ci, int soak, int smoke) {
        String value = text(name, "");
        if (!value.isEmpty()) {
            return Integer.parseInt(value);
        }
        return switch (profile) {
            case LAPTOP -> laptop;
            case CI -> ci;
            case SOAK -> soak;
            case SMOKE -> smoke;
        };
    }

    public Duration seconds(String name, int laptop, int ci, int soak, int smoke) {
        return Duration.ofSeconds(integer(name, laptop, ci, soak, smoke));
    }

    /** Latency assertion, only when asked for with {@code -DmaxP99Millis=}: 99th percentile of all requests. */
    public OptionalInt maxP99Millis() {
        String value = text("maxP99Millis", "");
        return value.isEmpty() ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(value));
    }

    /** Availability assertion, only when asked for with {@code -DmaxUnavailablePercent=}. */
    public OptionalDouble maxUnavailablePercent() {
        String value = text("maxUnavailablePercent", "");
        return value.isEmpty() ? OptionalDouble.empty() : OptionalDouble.of(Double.parseDouble(value));
    }

    /** Where a write goes: {@link #path} on the next instance of the rotation, or on {@link #baseUrl}. */
    public Function<Session, String> target() {
        if (rotation == null) {
            return session -> path;
        }
        return session -> rotation.next() + path;
    }

    /** A file named by {@code -Dname=}, if one was. */
    public Optional<Path> file(String name) {
        String value = text(name, "");
        return value.isEmpty() ? Optional.empty() : Optional.of(Path.of(value));
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
        return simulation + " -> " + (rotation == null ? baseUrl : String.join(" | ", rotation.instances())) + path + (tenant.isEmpty() ? "" : " (tenant " + tenant + ")")
                + " [profile " + profile.label() + "]: " + sizing;
    }

    private static String text(String name, String fallback) {
        String value = System.getProperty(name);
        return value == null || value.isBlank() ? fallback : value.trim();
    }

    private static String stripTrailingSlash(String url) {
        return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    }
}
