/**
 * The auto-configuration, one class per concern (store, observability, operator, filter), and the idempotency.* properties.
 * <p>
 * The only package that sees everything: it wires the others and nothing imports it.
 */
package dev.retrysafe.gateway.idempotency.config;
