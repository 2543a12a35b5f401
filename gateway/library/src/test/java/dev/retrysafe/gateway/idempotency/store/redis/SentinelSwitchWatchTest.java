package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class SentinelSwitchWatchTest {

    @Test
    void aSwitchOfTheMonitoredMasterGivesTheOldAndTheNewMaster() {
        assertThat(SentinelSwitchWatch.switchOf("mymaster", "mymaster 127.0.0.1 6379 10.0.0.2 6380"))
                .contains(List.of("127.0.0.1:6379", "10.0.0.2:6380"));
    }

    @Test
    void anotherMastersSwitchOrAMalformedMessageIsIgnored() {
        assertThat(SentinelSwitchWatch.switchOf("mymaster", "other 127.0.0.1 6379 10.0.0.2 6380")).isEmpty();
        assertThat(SentinelSwitchWatch.switchOf("mymaster", "mymaster 127.0.0.1 6379")).isEmpty();
        assertThat(SentinelSwitchWatch.switchOf("my", "mymaster 127.0.0.1 6379 10.0.0.2 6380")).isEmpty();
    }
}
