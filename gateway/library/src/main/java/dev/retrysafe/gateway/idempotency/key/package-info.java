/**
 * The idempotency key: where a route takes it from (KeySource: a header the client sends, or an id in the body),
 * what a valid key a client sends is (KeyPolicy), and why one is rejected (KeyCheck).
 * <p>
 * Plain Java plus Jackson (to read an id from a JSON body): imports nothing of ours but the JSON pointers, no
 * Spring, no Redis.
 */
package dev.retrysafe.gateway.idempotency.key;
