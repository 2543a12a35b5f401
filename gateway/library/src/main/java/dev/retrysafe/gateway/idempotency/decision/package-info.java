/**
 * The pure "what now?" for a request against the record found: forward, replay, conflict or wait (Decision), the replayed answer (ReplayResponse) and which upstream outcomes free the key (OutcomePolicy).
 * <p>
 * Plain Java: may import record and fingerprint only; no Spring, no Redis, no HTTP.
 */
package dev.retrysafe.gateway.idempotency.decision;
