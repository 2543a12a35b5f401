/**
 * JSON pointers as routes write them (RFC 6901, plus {@code *} for any array element or object member): parsed
 * once at startup, matched against member names and array indexes while a body is read.
 * <p>
 * Plain Java: imports nothing of ours, no Spring, no Redis.
 */
package dev.retrysafe.gateway.idempotency.pointer;
