/**
 * The Idempotency route filter: its factory and RouteDefaults, the front gate (IdempotencyGatewayFilter), the forwarded exchange (UpstreamExchange), response capture and the request body's handling.
 * <p>
 * May import every rule package, store (the interface, never store.redis), process, response, observability and tenant; never config.
 */
package dev.retrysafe.gateway.idempotency.filter;
