/**
 * The answers the gateway writes itself: GatewayError (status and message of each), ErrorEnvelope (the Onboarding API's error body) and GatewayResponses (writes replays and errors).
 * <p>
 * May import decision, record and store; used by the filter, the framing guard and the server's API-key chain, so it imports none of them.
 */
package dev.retrysafe.gateway.idempotency.response;
