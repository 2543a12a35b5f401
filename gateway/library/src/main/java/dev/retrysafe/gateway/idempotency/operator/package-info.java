/**
 * The operator API: reading records (RecordInspector, RecordView), counting them, settling one (Settlement) and the audit log's text (LogText).
 * <p>
 * May import key, scope and record; the store's Redis adapter implements its RecordInspector.
 */
package dev.retrysafe.gateway.idempotency.operator;
