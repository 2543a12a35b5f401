package dev.retrysafe.gateway.idempotency.operator;

import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.time.Duration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The operator's view of the store: look up, list and settle records by hand. Not on any request path. */
public interface RecordInspector {

    Mono<RecordView> find(String scopeHash, boolean includeBody);

    Flux<RecordView> list(RecordFilter filter);

    /**
     * Counts every record by state, and the IN_FLIGHT ones reserved more than {@code pendingAfter} ago. Reads each
     * record: a cost linear in the number of records (see docs/operations/metrics-and-logs.md), so it fails with
     * {@link TooManyRecords} rather than read more than {@code maxRecords}.
     */
    Mono<RecordCounts> count(Duration pendingAfter, long maxRecords);

    /** The store holds more records than a count may read. */
    final class TooManyRecords extends RuntimeException {
        public TooManyRecords(long maxRecords) {
            super("more than " + maxRecords + " records");
        }
    }

    /** Frees an IN_FLIGHT or UNCERTAIN record; emits the state it was in, or {@code ABSENT}. */
    Mono<String> release(String scopeHash);

    /** Completes an IN_FLIGHT or UNCERTAIN record with a reconciled response; emits the state it was in. */
    Mono<String> complete(String scopeHash, StoredResponse response, Duration retention, String who, String why);
}
