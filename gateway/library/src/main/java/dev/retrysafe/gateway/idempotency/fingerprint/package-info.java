/**
 * The payload fingerprint: the canonical form of a JSON body (unordered arrays sorted, numbers normalised) and its hash.
 * <p>
 * Plain Java plus Jackson's streaming parser: imports nothing else of ours, no Spring, no Redis.
 */
package dev.retrysafe.gateway.idempotency.fingerprint;
