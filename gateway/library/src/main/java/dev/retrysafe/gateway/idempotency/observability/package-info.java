/**
 * What the filter reports: meters (IdempotencyMetrics), events (IdempotencyEvents), the request log line (RequestReport), record-count gauges and trace ids.
 * <p>
 * May import the rules, store, process, background and operator's RecordCounts; never the filter.
 */
package dev.retrysafe.gateway.idempotency.observability;
