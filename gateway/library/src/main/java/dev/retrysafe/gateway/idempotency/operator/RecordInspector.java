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
     * Counts the records by state, and the IN_FLIGHT ones reserved more than {@code pendingAfter} ago. The COMPLETED
     * count may read every record; above {@code maxRecords} it is left unknown (see
     * docs/operations/metrics-and-logs.md).
     */
    Mono<RecordCounts> count(Duration pendingAfter, long maxRecords);

    /** Frees an IN_FLIGHT or UNCERTAIN record; emits the state it was in, or {@code ABSENT}. */
    Mono<String> release(String scopeHash);

    /** Completes an IN_FLIGHT or UNCERTAIN record with a reconciled response; emits the state it was in. */
    Mono<String> complete(String scopeHash, StoredResponse response, Duration retention, String who, String why);
}
