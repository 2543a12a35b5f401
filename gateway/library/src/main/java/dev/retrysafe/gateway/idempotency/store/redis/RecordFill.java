package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * A record as the near cache reads it ({@code HMGET} of {@link #FIELDS}), read as idempotency_reserve.lua reads it
 * for a replay: the strict fingerprint is the fingerprint unless the record says otherwise, the rules are 'c1' for a
 * record of format 2 that names none, '' for format 1. Only a COMPLETED record with its response is kept.
 */
final class RecordFill {
    static final List<String> FIELDS = List.of("state", "fingerprint", "response", "process_state", "strict", "rules",
            "format");

    private RecordFill() {
    }

    /** The settled record those values make, or empty (no record, not COMPLETED, no response). */
    static Optional<IdempotencyRecord> completed(List<byte[]> values, Function<byte[], StoredResponse> decode) {
        if (values.size() != FIELDS.size() || values.get(0) == null || values.get(1) == null || values.get(2) == null
                || values.get(2).length == 0 || !RecordState.COMPLETED.name().equals(text(values.get(0)))) {
            return Optional.empty();
        }
        String fingerprint = text(values.get(1));
        String strict = values.get(4) != null ? text(values.get(4)) : fingerprint;
        String rules = values.get(5) != null ? text(values.get(5)) : values.get(6) != null ? "c1" : "";
        return Optional.of(new IdempotencyRecord(RecordState.COMPLETED,
                new Fingerprints(new Fingerprint(fingerprint), new Fingerprint(strict), rules),
                Optional.of(decode.apply(values.get(2))),
                values.get(3) != null && "ENDED".equals(text(values.get(3)))));
    }

    private static String text(byte[] value) {
        return new String(value, StandardCharsets.UTF_8);
    }
}
