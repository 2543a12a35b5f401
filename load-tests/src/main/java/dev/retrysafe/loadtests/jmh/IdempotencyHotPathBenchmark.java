package dev.retrysafe.loadtests.jmh;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import dev.retrysafe.gateway.idempotency.fingerprint.CanonicalJson;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.RequestFingerprinter;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.key.KeyCheck;
import dev.retrysafe.gateway.idempotency.key.KeyPolicy;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;

/**
 * The pure, per-request work of the idempotency filter, without Redis or the network: the key check, the
 * canonical form of a JSON body, the request fingerprint and the scope hash. Run with {@code load-tests/jmh.sh}.
 *
 * <p>Inputs are built once per trial; the objects the filter holds for its lifetime (the key policy, the
 * canonicaliser, the fingerprinter) are built once too, while everything the filter builds per request is built
 * inside the measured method. Every method returns its result so that nothing is dead-code eliminated.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
public class IdempotencyHotPathBenchmark {

    private static final String HEADER = KeyPolicy.DEFAULT_HEADER_NAME;

    // Not final, so that the JIT cannot treat them as constants.
    private KeyPolicy keyPolicy;
    private List<String> keyHeaderValues;
    private IdempotencyKey key;
    private String tenant;
    private String routeId;
    private CanonicalJson canonicalJson;
    private RequestFingerprinter fingerprinter;
    private RequestFingerprinter withoutRules;
    private byte[] typicalJson;
    private byte[] largeJson;
    private byte[] largeRaw;

    @Setup(Level.Trial)
    public void setUp() {
        keyPolicy = new KeyPolicy(16, 64);
        String uuid = new UUID(0x3f2b8c1d9e4a4b7cL, 0x8d2e5f6a7b8c9d0eL).toString(); // fixed, so runs compare
        keyHeaderValues = List.of(uuid);
        key = new IdempotencyKey(uuid);
        tenant = "header:acme";
        routeId = "onboarding-merchants";
        canonicalJson = new CanonicalJson(Set.of("integrations", "paymentMethods", "sites"), List.of());
        fingerprinter = new RequestFingerprinter(canonicalJson, 0, List.of());
        withoutRules = new RequestFingerprinter(new CanonicalJson(Set.of(), List.of()), 0, List.of());
        typicalJson = MerchantBodies.typicalMerchant();
        largeJson = MerchantBodies.largeMerchant();
        largeRaw = MerchantBodies.rawBody();

        // A body that failed to canonicalise would silently measure the cheap fallback instead.
        if (!(keyCheck() instanceof KeyCheck.Valid)) {
            throw new IllegalStateException("The benchmark key is rejected");
        }
        requireCanonical("typical", typicalJson);
        requireCanonical("large", largeJson);
        if (canonicalJson.canonicalize(largeRaw).isPresent()) {
            throw new IllegalStateException("The raw body unexpectedly parses as JSON");
        }
    }

    private void requireCanonical(String name, byte[] json) {
        if (canonicalJson.canonicalize(json).isEmpty()) {
            throw new IllegalStateException("The " + name + " body does not canonicalise");
        }
    }

    /** {@code Idempotency-Key} header check for one UUID value; the valid path builds an {@link IdempotencyKey}. */
    @Benchmark
    public KeyCheck keyCheck() {
        return keyPolicy.check(HEADER, keyHeaderValues);
    }

    /** The scope (tenant + route + key) and its SHA-256, computed in the constructor: it names the Redis record. */
    @Benchmark
    public String scopeHash() {
        return new IdempotencyScope(tenant, routeId, key).hash();
    }

    /** Canonical form of a ~2 KB Onboarding merchant body (2,407 bytes). */
    @Benchmark
    public Optional<byte[]> canonicalJson2KB() {
        return canonicalJson.canonicalize(typicalJson);
    }

    /**
     * Canonical form of a ~1 MiB merchant body (1,051,601 bytes): 2,500 unordered sites, which get sorted and whose
     * canonical texts share their first ~64 characters, and an ordered catalog of about 1,800 products.
     */
    @Benchmark
    @Warmup(iterations = 5, time = 2) // ~30 ops a second: 5 x 1 s left the JIT unfinished on a busy machine
    public Optional<byte[]> canonicalJson1MB() {
        return canonicalJson.canonicalize(largeJson);
    }

    /**
     * Full fingerprints of {@code POST /merchants} with the ~2 KB JSON body, on the Onboarding route (unordered arrays):
     * canonical form then SHA-256, under the route's rules and strict.
     */
    @Benchmark
    public Fingerprint fingerprintJson2KB() {
        return fingerprinter.fingerprint("POST", "/merchants", null, "application/json", typicalJson);
    }

    /**
     * The same on a route without rules: its strict fingerprint is its fingerprint, computed once. Beside
     * {@link #fingerprintJson2KB()} (unordered arrays: the canonical form taken twice, with and without them), the
     * cost of the strict fingerprint a record keeps.
     */
    @Benchmark
    public Fingerprint fingerprintJson2KBWithoutRules() {
        return withoutRules.fingerprint("POST", "/merchants", null, "application/json", typicalJson);
    }

    /** Full fingerprint with the ~1 MiB JSON body. */
    @Benchmark
    @Warmup(iterations = 5, time = 2) // ~30 ops a second: 5 x 1 s left the JIT unfinished on a busy machine
    public Fingerprint fingerprintJson1MB() {
        return fingerprinter.fingerprint("POST", "/merchants", null, "application/json", largeJson);
    }

    /** Full fingerprint of a 1 MiB body that is not JSON: the raw bytes go straight into SHA-256. */
    @Benchmark
    public Fingerprint fingerprintRaw1MB() {
        return fingerprinter.fingerprint("POST", "/merchants", null, "application/octet-stream", largeRaw);
    }
}
