/**
 * The Idempotency-Key: what a valid key is (KeyPolicy) and why one is rejected (KeyCheck).
 * <p>
 * Plain Java: imports nothing of ours, no Spring, no Redis.
 */
package dev.retrysafe.gateway.idempotency.key;
