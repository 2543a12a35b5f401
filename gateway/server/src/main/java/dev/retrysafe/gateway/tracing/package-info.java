/**
 * How the server carries a request's trace to its upstream without an observation of its own per proxied call.
 */
package dev.retrysafe.gateway.tracing;
