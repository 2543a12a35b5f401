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
     * record: a cost linear in the number of records (see the README's Operations section).
     */
    Mono<RecordCounts> count(Duration pendingAfter);

    /** Frees an IN_FLIGHT or UNCERTAIN record; emits the state it was in, or {@code ABSENT}. */
    Mono<String> release(String scopeHash);

    /** Completes an IN_FLIGHT or UNCERTAIN record with a reconciled response; emits the state it was in. */
    Mono<String> complete(String scopeHash, StoredResponse response, Duration retention, String who, String why);
}
