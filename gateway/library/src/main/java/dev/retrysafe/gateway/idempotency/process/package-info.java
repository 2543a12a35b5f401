/**
 * Process-aware retention: reading a process id from a 202, polling its status (ProcessWatcher), seeing its end in status reads (ProcessStatusObserver).
 * <p>
 * May import scope, record, store and background; never the filter.
 */
package dev.retrysafe.gateway.idempotency.process;
