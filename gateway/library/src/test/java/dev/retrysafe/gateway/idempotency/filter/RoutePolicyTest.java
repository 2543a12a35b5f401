package dev.retrysafe.gateway.idempotency.filter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.retrysafe.gateway.idempotency.decision.OutcomePolicy;
import dev.retrysafe.gateway.idempotency.fingerprint.CanonicalJson;
import dev.retrysafe.gateway.idempotency.fingerprint.RequestFingerprinter;
import dev.retrysafe.gateway.idempotency.key.KeyPolicy;
import dev.retrysafe.gateway.idempotency.key.KeySource;
import dev.retrysafe.gateway.idempotency.record.StorableHeaders;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RoutePolicyTest {

    private static final KeyPolicy KEY_POLICY = new KeyPolicy(16, 64);
    private static final RequestFingerprinter FINGERPRINTER =
            new RequestFingerprinter(new CanonicalJson(Set.of(), List.of()), 0, List.of());
    private static final StorableHeaders STORABLE = new StorableHeaders(Set.of("Set-Cookie"));
    private static final OutcomePolicy OUTCOMES = new OutcomePolicy(Set.of(503));

    /** Builds a policy from valid defaults, with one value overridden per test. */
    private static final class Builder {
        String keyHeader = "Idempotency-Key";
        Set<String> methods = Set.of("POST", "PUT", "PATCH", "DELETE");
        int replayStatus = 200;
        Duration inFlightWait = Duration.ofSeconds(2);
        Duration inFlightLease = Duration.ofSeconds(60);
        Duration retention = Duration.ofHours(24);
        int maxRequestBytes = 1_048_576;
        Duration requestBodyTimeout = Duration.ofSeconds(30);
        int maxStoredResponseBytes = 1_048_576;
        Duration storeTimeout = Duration.ofSeconds(1);
        Duration retryAfter = Duration.ofSeconds(1);

        RoutePolicy build() {
            return new RoutePolicy(new KeySource.Header(keyHeader), KEY_POLICY, methods, FINGERPRINTER, replayStatus, STORABLE,
                    inFlightWait, inFlightLease, retention, OUTCOMES, maxRequestBytes, requestBodyTimeout,
                    maxStoredResponseBytes, storeTimeout, retryAfter, false, java.util.Optional.empty(), false,
                    java.util.Optional.empty(), dev.retrysafe.gateway.idempotency.response.ErrorContract.ONBOARDING,
                    java.util.Optional.empty());
        }
    }

    @Test
    void acceptsValidSettings() {
        RoutePolicy policy = new Builder().build();

        assertThat(policy.keySource()).isEqualTo(new KeySource.Header("Idempotency-Key"));
        assertThat(policy.replayStatus()).isEqualTo(200);
        assertThat(policy.keyPolicy()).isSameAs(KEY_POLICY);
    }

    @Test
    void aGivenUpReserveIsReleasedForTheLeaseButAtLeastTenSettleDeadlines() {
        assertThat(new Builder().build().givenUpReleaseSpan()).as("60 s lease, 3 s settle deadline")
                .isEqualTo(Duration.ofSeconds(60));
        Builder shortLease = new Builder();
        shortLease.inFlightLease = Duration.ofSeconds(2);
        shortLease.storeTimeout = Duration.ofMillis(300);
        assertThat(shortLease.build().givenUpReleaseSpan()).as("2 s lease, 0.9 s settle deadline")
                .isEqualTo(Duration.ofSeconds(9));
    }

    @Test
    void acceptsTheBoundaryValues() {
        Builder b = new Builder();
        b.replayStatus = 299;
        b.inFlightWait = Duration.ZERO;
        b.maxRequestBytes = 0;
        b.maxStoredResponseBytes = 0;
        b.inFlightLease = Duration.ofMillis(1);
        b.retention = Duration.ofNanos(1);
        b.storeTimeout = Duration.ofMillis(1);

        RoutePolicy policy = b.build();

        assertThat(policy.replayStatus()).isEqualTo(299);
        assertThat(policy.inFlightWait()).isZero();
        assertThat(policy.maxStoredResponseBytes()).isZero();
        b.replayStatus = 201;
        assertThat(b.build().replayStatus()).isEqualTo(201);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 100, 199, 300, 303, 400, 409, 500})
    void rejectsANon2xxReplayStatus(int status) {
        Builder b = new Builder();
        b.replayStatus = status;

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("replay-status");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "\t", "  \n "})
    void rejectsABlankKeyHeader(String header) {
        Builder b = new Builder();
        b.keyHeader = header;

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("key-header");
    }

    @Test
    void rejectsAMissingKeyHeader() {
        Builder b = new Builder();
        b.keyHeader = null;

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("key-header");
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -1, -60_000})
    void rejectsANonPositiveInFlightLease(long millis) {
        Builder b = new Builder();
        b.inFlightLease = Duration.ofMillis(millis);

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("in-flight-lease");
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -1, -60_000})
    void rejectsANonPositiveRetention(long millis) {
        Builder b = new Builder();
        b.retention = Duration.ofMillis(millis);

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("retention");
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -1, -60_000})
    void rejectsANonPositiveStoreTimeout(long millis) {
        Builder b = new Builder();
        b.storeTimeout = Duration.ofMillis(millis);

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("store-timeout");
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -1})
    void rejectsANonPositiveRequestBodyTimeout(long millis) {
        Builder b = new Builder();
        b.requestBodyTimeout = Duration.ofMillis(millis);

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("request-body-timeout");
    }

    @Test
    void rejectsMissingDurations() {
        Builder lease = new Builder();
        lease.inFlightLease = null;
        Builder retention = new Builder();
        retention.retention = null;
        Builder timeout = new Builder();
        timeout.storeTimeout = null;

        assertThatIllegalArgumentException().isThrownBy(lease::build);
        assertThatIllegalArgumentException().isThrownBy(retention::build);
        assertThatIllegalArgumentException().isThrownBy(timeout::build);
    }

    @Test
    void rejectsANegativeInFlightWait() {
        Builder b = new Builder();
        b.inFlightWait = Duration.ofMillis(-1);

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("in-flight-wait");
    }

    @Test
    void rejectsANegativeRequestByteLimit() {
        Builder b = new Builder();
        b.maxRequestBytes = -1;

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("byte limits");
    }

    @Test
    void rejectsANegativeStoredResponseByteLimit() {
        Builder b = new Builder();
        b.maxStoredResponseBytes = -1;

        assertThatIllegalArgumentException().isThrownBy(b::build).withMessageContaining("byte limits");
    }

    @Test
    void guardsOnlyTheConfiguredMethodsAndCopiesThem() {
        Set<String> methods = new HashSet<>(Set.of("POST"));
        Builder b = new Builder();
        b.methods = methods;
        RoutePolicy policy = b.build();

        methods.add("GET");

        assertThat(policy.guards("POST")).isTrue();
        assertThat(policy.guards("GET")).isFalse();
        assertThat(policy.methods()).containsExactly("POST");
    }
}
