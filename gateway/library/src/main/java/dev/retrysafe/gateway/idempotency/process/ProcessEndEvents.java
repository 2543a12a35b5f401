package dev.retrysafe.gateway.idempotency.process;

/** What operations must hear about process ends. */
public interface ProcessEndEvents {

    /**
     * A terminal status passed through the gateway but could not be recorded before the status response was
     * released (the store failed or was slower than its timeout).
     */
    void processEndUnrecorded(String routeId, String processId, String terminalStatus, Throwable error);
}
