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
        // Hold the bus ports of many free ports; nodePort must pass over every one of them.
        List<ServerSocket> held = new ArrayList<>();
        Set<Integer> heldBusOf = new HashSet<>();
        try {
            for (int i = 0; i < 200; i++) {
                int port = LocalRedisCluster.freePort();
                int bus = port + LocalRedisCluster.BUS_PORT_OFFSET;
                if (bus > 65535) {
                    continue;
                }
                try {
                    held.add(new ServerSocket(bus, 1, InetAddress.getByName("127.0.0.1")));
                    heldBusOf.add(port);
                } catch (java.io.IOException inUse) {
                    // someone else has it: nodePort must pass over it as well
                }
            }
            for (int i = 0; i < 20; i++) {
                int port = LocalRedisCluster.nodePort(List.of());
                assertThat(heldBusOf).doesNotContain(port);
            }
        } finally {
            for (ServerSocket socket : held) {
                socket.close();
            }
        }
    }
}
