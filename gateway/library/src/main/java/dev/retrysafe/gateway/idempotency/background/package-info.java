/**
 * Background work: the one way the library runs something every interval (PeriodicRounds: record counts, memory
 * checks, lease renewals), and an instance's share of a fleet queue's work on top of it (FleetWorker, ClaimRound:
 * process polls, lookups at the upstream), started and stopped with the application.
 * <p>
 * Reactor and Spring's lifecycle contracts (SmartLifecycle, context events); imports nothing of ours, so every
 * package may use it.
 */
package dev.retrysafe.gateway.idempotency.background;
