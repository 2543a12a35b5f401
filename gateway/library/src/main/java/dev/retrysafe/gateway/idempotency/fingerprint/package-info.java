/**
 * The payload fingerprint: the canonical form of a JSON body (unordered arrays sorted, numbers normalised, ignored
 * fields left out), the route's intent headers, and its hash.
 * <p>
 * Plain Java plus Jackson's streaming parser: imports nothing of ours but the JSON pointers (of the fields a route
 * ignores), no Spring, no Redis.
 */
package dev.retrysafe.gateway.idempotency.fingerprint;
