package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.support.LocalRedisSentinel;
import java.util.Map;
import java.util.Random;
import java.util.function.LongConsumer;

/** A master, a replica and three Sentinels ({@link LocalRedisSentinel}), failed over again and again. */
final class SentinelFailovers implements Failovers {
    private final LocalRedisSentinel sentinel;

    SentinelFailovers() throws Exception {
        sentinel = new LocalRedisSentinel();
    }

    @Override
    public Map<String, String> gatewayProperties() {
        return Map.of("spring.data.redis.sentinel.master", LocalRedisSentinel.MASTER_NAME,
                "spring.data.redis.sentinel.nodes", sentinel.sentinelNodes(),
                "spring.data.redis.timeout", "1s");
    }

    /**
     * {@code SENTINEL FAILOVER} promotes the replica without waiting for it to catch up, and the old master stays a
     * writable master (clients connected to it keep writing there) until Sentinel converts it to a replica, some
     * 8-18 s later ({@code SENTINEL_PUBLISH_PERIOD * 4} after it reports its role): all of that is lost.
     */
    @Override
    public boolean failOver(Random random) throws Exception {
        sentinel.failOver();
        return true;
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
