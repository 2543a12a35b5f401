package dev.retrysafe.gateway.idempotency.operator;

/**
 * How many records the store holds in each state, cluster-wide, at one moment.
 *
 * @param pending IN_FLIGHT records reserved longer ago than the threshold asked for: a normal request is in flight
 *                for milliseconds, so these are stuck exchanges or gateway instances that died holding them
 */
public record RecordCounts(long inFlight, long uncertain, long completed, long pending) {
}
