/**
 * The request framing guard on Netty: a body whose chunked framing breaks ends in an error, other Transfer-Encodings are refused.
 * <p>
 * May import response only.
 */
package dev.retrysafe.gateway.idempotency.wire;
