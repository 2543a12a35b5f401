package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.support.LocalRedisSentinel;
import dev.retrysafe.gateway.support.RespProbe;
import java.util.Map;
import java.util.Random;
import java.util.function.LongConsumer;

/** A master, a replica and three Sentinels ({@link LocalRedisSentinel}), failed over again and again. */
final class SentinelFailovers implements Failovers {
    /** The gateway's connections carry it, so that the run can see which node they are on. */
    static final String CLIENT_NAME = "torture-gateway";
    private final LocalRedisSentinel sentinel;

    SentinelFailovers() throws Exception {
        sentinel = new LocalRedisSentinel();
    }

    @Override
    public Map<String, String> gatewayProperties() {
        return Map.of("spring.data.redis.sentinel.master", LocalRedisSentinel.MASTER_NAME,
                "spring.data.redis.sentinel.nodes", sentinel.sentinelNodes(),
                "spring.data.redis.client-name", CLIENT_NAME,
                "spring.data.redis.timeout", "1s");
    }

    /**
     * {@code SENTINEL FAILOVER} promotes the replica without waiting for it to catch up, and the old master stays a
     * writable master (clients connected to it keep writing there) until Sentinel converts it to a replica, some
     * 8-18 s later ({@code SENTINEL_PUBLISH_PERIOD * 4} after it reports its role): what is written there meanwhile
     * is lost. The gateway follows the switch and leaves the old master (it cuts its links on Sentinel's
     * {@code +switch-master} and refuses new ones): the loss window ends once the old master has no connection of
     * the gateway left; a gateway still there when it is converted fails the run.
     */
    @Override
    public void failOver(Random random, Runnable lossEnds) throws Exception {
        int old = sentinel.startFailover();
        sentinel.awaitMasterOtherThan(old);
        while (LocalRedisSentinel.connectionsNamed(old, CLIENT_NAME) > 0 && LocalRedisSentinel.isMaster(old)) {
            RespProbe.pollAgain();
        }
        if (!LocalRedisSentinel.isMaster(old)) {
            throw new IllegalStateException("The gateway stayed on the old master " + old + " until Sentinel converted "
                    + "it to a replica: every record written there meanwhile is lost");
        }
        lossEnds.run();
        sentinel.awaitOldMasterDemoted(old);
    }

    @Override
    public void killMaster(Random random, Runnable killedNow, LongConsumer rejoined) throws Exception {
        int killed = sentinel.killMaster();
        killedNow.run();
        sentinel.awaitMasterOtherThan(killed);
        sentinel.restartAsReplica(killed); // a replica from its start: it opens no window
    }

    @Override
    public void awaitReplicated() throws Exception {
        sentinel.awaitReplicasReady();
    }

    @Override
    public void close() {
        sentinel.close();
    }
}
