/**
 * What a record is: IdempotencyRecord, its RecordState, the StoredResponse and the headers HTTP lets us store and replay.
 * <p>
 * Plain Java: may import fingerprint only.
 */
package dev.retrysafe.gateway.idempotency.record;
