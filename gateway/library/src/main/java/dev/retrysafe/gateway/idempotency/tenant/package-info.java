/**
 * Who the tenant is: the TenantResolver variation point and its principal-or-header default.
 * <p>
 * May import Spring WebFlux's exchange and Reactor; nothing of ours.
 */
package dev.retrysafe.gateway.idempotency.tenant;
