package dev.retrysafe.gateway.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LocalRedisClusterPortsTest {

    @Test
    void nodePortsNeverShareAClientOrBusPortAndEveryBusPortIsValid() throws Exception {
        for (int round = 0; round < 50; round++) {
            List<Integer> chosen = new ArrayList<>();
            Set<Integer> taken = new HashSet<>();
            for (int i = 0; i < 6; i++) {
                int port = LocalRedisCluster.nodePort(chosen);
                int bus = port + LocalRedisCluster.BUS_PORT_OFFSET;
                assertThat(bus).isLessThanOrEqualTo(65535);
                assertThat(taken.add(port)).as("port %d already a node's port or bus", port).isTrue();
                assertThat(taken.add(bus)).as("bus %d already a node's port or bus", bus).isTrue();
                chosen.add(port);
            }
        }
    }

    @Test
    void aCandidateThatIsAnotherNodesBusPortOrWhoseBusIsAnotherNodesPortIsPassedOver() throws Exception {
        // Fixed ports below Linux's ephemeral range (32768 up), so that each candidate's own bus port is valid and
        // normally free: only the clash with the chosen node can pass it over. The last candidate is a fresh pair.
        int clean = LocalRedisCluster.nodePort(List.of());
        // The CI failure: the candidate is the chosen node's bus port.
        assertThat(LocalRedisCluster.nodePort(List.of(12000), sequence(22000, clean))).isEqualTo(clean);
        // The other way round: the candidate's bus port is the chosen node's port.
        assertThat(LocalRedisCluster.nodePort(List.of(22000), sequence(12000, clean))).isEqualTo(clean);
        // The same port twice.
        assertThat(LocalRedisCluster.nodePort(List.of(12000), sequence(12000, clean))).isEqualTo(clean);
        assertThat(LocalRedisCluster.nodePort(List.of(), sequence(60000, clean))).as("bus port above 65535")
                .isEqualTo(clean);
    }

    private static LocalRedisCluster.PortSource sequence(int... ports) {
        int[] next = {0};
        return () -> ports[next[0]++];
    }

    @Test
    void aPortWhoseBusPortIsTakenIsNotChosen() throws Exception {
        int clean = LocalRedisCluster.nodePort(List.of());
        try (ServerSocket bus = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int candidate = bus.getLocalPort() - LocalRedisCluster.BUS_PORT_OFFSET;
            assertThat(LocalRedisCluster.nodePort(List.of(), sequence(candidate, clean))).isEqualTo(clean);
        }
    }

    @Test
    void nodesThatAreStartedAgainOnTheirPortsGetPortsNoOutgoingConnectionCanHoldMeanwhile() throws Exception {
        int ephemeral = LocalRedisCluster.ephemeralRangeStart();
        for (int i = 0; i < 50; i++) {
            int port = LocalRedisCluster.restartablePort();
            assertThat(port).isGreaterThanOrEqualTo(10_000);
            assertThat(port + LocalRedisCluster.BUS_PORT_OFFSET).as("its bus port too").isLessThan(ephemeral);
            int node = LocalRedisCluster.nodePort(List.of());
            assertThat(node + LocalRedisCluster.BUS_PORT_OFFSET).as("a cluster node's bus port").isLessThan(ephemeral);
        }
    }
}
