package dev.retrysafe.gateway.idempotency.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import org.junit.jupiter.api.Test;

class IdempotencyKeyTest {

    @Test
    void toStringShowsOnlyTheLength() {
        IdempotencyKey key = new IdempotencyKey("8f1c2d3e4a5b6c7d8e9f0a1b");
        assertThat(key.toString())
                .isEqualTo("IdempotencyKey[length=24]")
                .doesNotContain("8f1c");
    }

    @Test
    void keysWithTheSameValueAreEqual() {
        assertThat(new IdempotencyKey("abc-DEF_123")).isEqualTo(new IdempotencyKey("abc-DEF_123"));
    }

    @Test
    void refusesValuesOutsideTheCharacterSetWithoutEchoingThem() {
        assertThatNullPointerException().isThrownBy(() -> new IdempotencyKey(null));
        assertThatIllegalArgumentException().isThrownBy(() -> new IdempotencyKey(""));
        assertThatIllegalArgumentException().isThrownBy(() -> new IdempotencyKey(" padded "))
                .withMessageNotContaining("padded");
    }
}
