package dev.retrysafe.gateway.faults.torture;

/**
 * What the store nemesis does to Redis, or to the wire between the gateway and Redis, for a while; the name is how
 * {@code -Dtorture.store-faults} picks it.
 */
enum StoreFault {
    /** Redis's replies reach the gateway later than store-timeout, in order: every command still runs. */
    DELAY("delay"),
    /** Nothing moves either way; the connections stay open. */
    STALL("stall"),
    /** Every connection reset (RST): Lettuce reconnects and re-sends what had no reply (at-least-once). */
    RESET("reset"),
    /** Every connection closed (FIN). */
    CLOSE("close"),
    /** Commands reach Redis and run, replies vanish, nothing closes; at the end the connections are reset. */
    HALF_OPEN("halfopen"),
    /** Redis killed and started again on the same port; its AOF ({@code appendfsync always}) keeps every record. */
    RESTART("restart"),
    /** Redis killed and started again without its AOF: every record is forgotten. Keys begun before are exempt. */
    RESTART_FORGETTING("restart-forgetting");

    final String label;

    StoreFault(String label) {
        this.label = label;
    }
}
