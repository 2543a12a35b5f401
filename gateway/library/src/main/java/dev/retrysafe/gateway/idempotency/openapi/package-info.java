/**
 * Serves the OpenAPI description of the responses the gateway produces (META-INF/openapi/idempotency-gateway.yaml).
 * <p>
 * Imports nothing of ours.
 */
package dev.retrysafe.gateway.idempotency.openapi;
