/**
 * Zero-setup runs: a Redis server started with the gateway (idempotency.embedded-redis.*).
 * <p>
 * Imports nothing of ours.
 */
package dev.retrysafe.gateway.embedded;
