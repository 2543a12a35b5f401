package dev.retrysafe.gateway.idempotency.operator;

import java.util.OptionalLong;

/**
 * How many records the store holds in each state, cluster-wide, at one moment.
 *
 * @param completed        empty when it was not counted: the COMPLETED count reads every record's key, and gives up
 *                         above {@code idempotency.record-counts.max-records}; the others come from the index of
 *                         unsettled records and are always known
 * @param pending          IN_FLIGHT records reserved longer ago than the threshold asked for: a normal request is in
 *                         flight for milliseconds, so these are stuck exchanges or gateway instances that died holding
 *                         them
 * @param processesPending COMPLETED records whose process (a 202's) has not been seen ending yet
 * @param oldest           how long the oldest IN_FLIGHT, UNCERTAIN and process-pending records have been so, read with
 *                         the counts from the same index
 */
public record RecordCounts(long inFlight, long uncertain, OptionalLong completed, long pending,
        long processesPending, RecordAges oldest) {
}
