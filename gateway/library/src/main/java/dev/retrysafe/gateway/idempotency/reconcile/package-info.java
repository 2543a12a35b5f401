/**
 * Reconciliation of UNCERTAIN records with their upstream: the route's lookup template (LookupTemplate), what a
 * route asks and how it reads the answer (Reconciliation), and the fleet-wide lookups (Reconciler).
 * <p>
 * May import record, store, background, operator (the audit line) and observability (the counter); never the filter.
 */
package dev.retrysafe.gateway.idempotency.reconcile;
