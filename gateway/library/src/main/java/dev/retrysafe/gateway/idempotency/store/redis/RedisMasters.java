package dev.retrysafe.gateway.idempotency.store.redis;

import java.util.Properties;
import java.util.function.Function;
import org.springframework.data.redis.connection.ReactiveRedisClusterConnection;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.RedisClusterNode;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Every Redis master the store writes to, each asked on its own: the one Redis (or Sentinel's current master), or
 * every master of a Cluster by the client's view of the topology. A master's settings are its own, so a Cluster is
 * only as safe as its worst master.
 */
final class RedisMasters {
    /** One master: a name for the logs, and the slot tag of a key it holds (its first slot's on a Cluster). */
    record Master(String name, String tag, RedisClusterNode node) {
    }

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final boolean cluster;
    private final String singleName;

    /** @param singleName how a single Redis (or Sentinel's master) is named in the logs */
    RedisMasters(ReactiveRedisTemplate<String, byte[]> redis, boolean cluster, String singleName) {
        this.redis = redis;
        this.cluster = cluster;
        this.singleName = singleName;
    }

    Flux<Master> list() {
        if (!cluster) {
            return Flux.just(new Master(singleName, RedisKeyspace.slotTagOf(0), null));
        }
        return onCluster(ReactiveRedisClusterConnection::clusterGetNodes)
                .filter(node -> node.isMaster() && node.getSlotRange().getSlotsArray().length > 0)
                .map(node -> new Master(node.asString(), RedisKeyspace.slotTagOf(node.getSlotRange().getSlotsArray()[0]),
                        node));
    }

    /** {@code CONFIG GET pattern} on that master. */
    Mono<Properties> config(Master master, String pattern) {
        return master.node() == null
                ? redis.execute(connection -> connection.serverCommands().getConfig(pattern)).next()
                : onCluster(connection -> connection.serverCommands().getConfig(master.node(), pattern)).next();
    }

    /** {@code INFO section} on that master. */
    Mono<Properties> info(Master master, String section) {
        return master.node() == null
                ? redis.execute(connection -> connection.serverCommands().info(section)).next()
                : onCluster(connection -> connection.serverCommands().info(master.node(), section)).next();
    }

    private <T> Flux<T> onCluster(Function<ReactiveRedisClusterConnection, org.reactivestreams.Publisher<T>> call) {
        ReactiveRedisConnectionFactory factory = redis.getConnectionFactory();
        return Flux.usingWhen(Mono.fromSupplier(factory::getReactiveClusterConnection), call,
                ReactiveRedisClusterConnection::closeLater);
    }
}
