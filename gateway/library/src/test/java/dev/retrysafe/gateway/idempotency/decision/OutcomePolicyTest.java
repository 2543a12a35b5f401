package dev.retrysafe.gateway.idempotency.decision;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OutcomePolicyTest {

    /** The default of {@code idempotency.release-on-status}. */
    private static final OutcomePolicy DEFAULT = new OutcomePolicy(Set.of(401, 403, 408, 425, 429, 503));

    @ParameterizedTest
    @ValueSource(ints = {401, 403, 408, 425, 429, 503})
    void releaseStatusesAreNotFinal(int status) {
        assertThat(DEFAULT.isFinal(status)).isFalse();
    }

    @ParameterizedTest
    @ValueSource(ints = {200, 201, 202, 204, 400, 404, 409, 422, 500, 502, 504})
    void everyOtherStatusIsFinalIncludingServerErrors(int status) {
        assertThat(DEFAULT.isFinal(status)).isTrue();
    }

    @Test
    void aCustomReleaseSetReplacesTheDefault() {
        OutcomePolicy policy = new OutcomePolicy(Set.of(500));

        assertThat(policy.isFinal(500)).isFalse();
        assertThat(policy.isFinal(503)).isTrue();
    }

    @Test
    void theReleaseSetIsCopiedSoLaterChangesToTheSourceDoNotLeakIn() {
        Set<Integer> source = new HashSet<>(Set.of(503));
        OutcomePolicy policy = new OutcomePolicy(source);

        source.add(500);

        assertThat(policy.isFinal(500)).isTrue();
        assertThat(policy.releaseOnStatus()).containsExactly(503);
    }
}
