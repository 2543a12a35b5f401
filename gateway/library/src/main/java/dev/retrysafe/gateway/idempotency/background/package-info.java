/**
 * Background work: the one way the library runs something every interval (record counts, memory checks, process
 * polls, lookups at the upstream, lease renewals), started and stopped with the application.
 * <p>
 * Plain Reactor and Spring's {@code SmartLifecycle} contract; imports nothing of ours, so every package may use it.
 */
package dev.retrysafe.gateway.idempotency.background;
