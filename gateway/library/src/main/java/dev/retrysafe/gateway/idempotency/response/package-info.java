/**
 * The answers the gateway writes itself: GatewayError (the kind and message of each), ErrorContract (a route's
 * statuses and body form for them), ErrorEnvelope (the Onboarding API's error body) and GatewayResponses (writes
 * replays and errors).
 * <p>
 * May import decision, record and store; used by the filter, the framing guard and the server's API-key chain, so it imports none of them.
 */
package dev.retrysafe.gateway.idempotency.response;
