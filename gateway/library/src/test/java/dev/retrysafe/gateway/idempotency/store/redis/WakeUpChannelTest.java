package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.SlotHash;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class WakeUpChannelTest {

    @Test
    void aShardChannelLandsInTheSlotOfItsRecordAndNamesItsTag() {
        String scopeHash = "V2hhdCBhIGhhc2ggbG9va3MgbGlrZQ";
        String channel = WakeUpChannel.SHARDED.channelOf(scopeHash);

        assertThat(SlotHash.getSlot(channel)).isEqualTo(SlotHash.getSlot(RedisKeyspace.recordKey(scopeHash)));
        assertThat(RedisKeyspace.tagOfShardChannel(channel)).isEqualTo(RedisKeyspace.slotTag(scopeHash));
        assertThat(RedisKeyspace.tagOfShardChannel(RedisKeyspace.CLASSIC_CHANNEL)).isNull();
        assertThat(WakeUpChannel.CLASSIC.channelOf(scopeHash)).isEqualTo("idempotency:settled");
    }

    @Test
    void redis7AndLaterGetShardChannels() {
        assertThat(WakeUpChannel.forServers(info("redis_version", "7.0.15"))).isEqualTo(WakeUpChannel.SHARDED);
        assertThat(WakeUpChannel.forServers(info("redis_version", "8.2.1"))).isEqualTo(WakeUpChannel.SHARDED);
        assertThat(WakeUpChannel.forServers(info("redis_version", "6.2.14"))).isEqualTo(WakeUpChannel.CLASSIC);
    }

    /** A script's SPUBLISH on a node still on Redis 6 would fail the whole step. */
    @Test
    void aClusterWithOneNodeStillOnRedis6StaysOnTheClassicChannel() {
        Properties nodes = info("127.0.0.1:7000.redis_version", "7.2.4");
        nodes.setProperty("127.0.0.1:7001.redis_version", "6.2.14");
        nodes.setProperty("127.0.0.1:7002.redis_version", "7.2.4");

        assertThat(WakeUpChannel.forServers(nodes)).isEqualTo(WakeUpChannel.CLASSIC);
        nodes.setProperty("127.0.0.1:7001.redis_version", "7.2.4");
        assertThat(WakeUpChannel.forServers(nodes)).isEqualTo(WakeUpChannel.SHARDED);
    }

    @Test
    void noVersionOrAnUnreadableOneIsClassic() {
        assertThat(WakeUpChannel.forServers(new Properties())).isEqualTo(WakeUpChannel.CLASSIC);
        assertThat(WakeUpChannel.forServers(info("redis_version", "unknown"))).isEqualTo(WakeUpChannel.CLASSIC);
    }

    private static Properties info(String name, String value) {
        Properties info = new Properties();
        info.setProperty(name, value);
        return info;
    }
}
