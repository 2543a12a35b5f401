package dev.retrysafe.gateway.faults.torture;

import java.util.Map;
import java.util.Random;
import java.util.function.LongConsumer;

/**
 * A replicated Redis the store nemesis fails over (Sentinel-managed, or a Cluster): how the gateway reaches it, and
 * the two failovers. Each says when the gateway's writes can no longer reach the old master, which ends the window
 * in which the run counts writes as possibly lost.
 */
interface Failovers extends AutoCloseable {

    /** The {@code spring.data.redis.*} properties that point a gateway at it. */
    Map<String, String> gatewayProperties();

    /**
     * A manual failover; returns once the promoted replica takes writes and the old master is its replica. If
     * writes the old master acknowledged may be lost, {@code lossEnds} runs once the gateway can no longer write
     * there; it does not run at all for a failover that loses nothing.
     */
    void failOver(Random random, Runnable lossEnds) throws Exception;

    /**
     * SIGKILLs a master, waits for its replica's promotion, starts it again (empty) and waits until it is a replica.
     * A dead master takes no write, so the loss window ends at the kill: {@code killed} runs just after it. A node
     * that restarts believing it is still a master (a Cluster node with its {@code nodes.conf}) opens a window of
     * its own until it knows better: {@code rejoined} runs then, with when it was started (System.nanoTime).
     */
    void killMaster(Random random, Runnable killed, LongConsumer rejoined) throws Exception;

    /** Waits until every master has a replica in sync again and the topology is whole: the next failover can come. */
    void awaitReplicated() throws Exception;

    @Override
    void close();
}
