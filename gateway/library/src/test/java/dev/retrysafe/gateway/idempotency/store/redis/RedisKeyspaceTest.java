package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.SlotHash;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RedisKeyspaceTest {

    @Test
    void everySlotHasItsOwnShortTag() {
        List<String> tags = RedisKeyspace.allSlotTags();
        assertThat(tags).hasSize(16_384);
        assertThat(new HashSet<>(tags)).hasSize(16_384);
        for (int slot = 0; slot < RedisKeyspace.SLOTS; slot++) {
            assertThat(SlotHash.getSlot(RedisKeyspace.slotTagOf(slot))).isEqualTo(slot);
            assertThat(RedisKeyspace.slotTagOf(slot)).hasSizeLessThanOrEqualTo(4).doesNotContain("{", "}");
        }
    }

    @Test
    void anIndexKeyTaggedLikeARecordLandsInTheRecordsSlot() {
        long seed = new Random().nextLong();
        Random random = new Random(seed);
        for (int i = 0; i < 1_000; i++) {
            String scopeHash = Long.toHexString(random.nextLong()) + Long.toHexString(random.nextLong());
            String indexKey = "idempotency:processes:{" + RedisKeyspace.slotTag(scopeHash) + "}";
            assertThat(SlotHash.getSlot(indexKey)).as("seed %d, scope %s", seed, scopeHash)
                    .isEqualTo(SlotHash.getSlot(RedisKeyspace.recordKey(scopeHash)));
        }
    }
}
