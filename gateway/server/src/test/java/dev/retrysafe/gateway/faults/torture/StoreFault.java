package dev.retrysafe.gateway.faults.torture;

/**
 * What the store nemesis does to Redis, or to the wire between the gateway and Redis, for a while; the name is how
 * {@code -Dtorture.store-faults} picks it. The failovers apply to a Sentinel or Cluster topology, the others to a
 * standalone Redis ({@link StoreTopology#faults}).
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
    RESTART_FORGETTING("restart-forgetting"),
    /**
     * A manual failover: {@code SENTINEL FAILOVER} (promotes the replica at once: the old master's last writes can be
     * lost) or {@code CLUSTER FAILOVER} on a random master's replica (the replica catches up first: nothing lost).
     */
    FAILOVER("failover", true),
    /** A (random) master SIGKILLed: its replica is promoted, what it had not replicated is lost; then it rejoins. */
    KILL_MASTER("kill-master", true);

    final String label;
    /** A failover of a replicated Redis, not a fault of the proxy or of a standalone Redis. */
    final boolean failover;

    StoreFault(String label) {
        this(label, false);
    }

    StoreFault(String label, boolean failover) {
        this.label = label;
        this.failover = failover;
    }
}
