package dev.retrysafe.gateway.idempotency.store.redis;

import io.lettuce.core.resource.NettyCustomizer;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every TCP link of the Lettuce client (installed as its {@link NettyCustomizer}), so that the links to a master
 * Sentinel has replaced can be cut: after {@code SENTINEL FAILOVER} the old master stays a writable master until
 * Sentinel converts it to a replica, seconds later, and what the gateway writes there meanwhile is lost when it is.
 * A cut link is Lettuce's to reconnect: it asks Sentinel for the master again (the new one) and re-sends the commands
 * that had no reply. Until {@link #REFUSED_FOR} after the switch a new link to the replaced master is closed as soon
 * as it connects, before Lettuce writes anything on it: a Sentinel that has not yet learned of the switch (the others
 * learn within seconds) would otherwise send a reconnection back there.
 */
public final class RedisLinks implements NettyCustomizer {
    /**
     * Long enough for every Sentinel to learn of a switch (their hello messages go every 2 s) and for Sentinel to
     * convert the old master to a replica; bounded, so that a missed switch back cannot keep the gateway off the
     * master for good.
     */
    static final Duration REFUSED_FOR = Duration.ofSeconds(60);
    private static final Logger log = LoggerFactory.getLogger(RedisLinks.class);

    private final Set<Channel> channels = ConcurrentHashMap.newKeySet();
    /** "host:port" of each replaced master, and until when (System.nanoTime) links to it are refused. */
    private final Map<String, Long> replaced = new ConcurrentHashMap<>();
    private final LongSupplier nanoTime;

    public RedisLinks() {
        this(System::nanoTime);
    }

    RedisLinks(LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
    }

    @Override
    public void afterChannelInitialized(Channel channel) {
        channels.add(channel);
        channel.closeFuture().addListener(closed -> channels.remove(channel));
        // First in the pipeline: it sees the link connected before Lettuce's handlers do.
        channel.pipeline().addFirst(new RefuseReplacedMaster());
    }

    /**
     * Sentinel names {@code newMaster} in place of {@code oldMaster} (each "host:port" as Sentinel gives it): cuts
     * every link to the old one and refuses new ones for a while; the new one is no longer refused.
     *
     * @return how many links were cut
     */
    int masterReplaced(String oldMaster, String newMaster) {
        replaced.remove(newMaster);
        replaced.put(oldMaster, nanoTime.getAsLong() + REFUSED_FOR.toNanos());
        int cut = 0;
        for (Channel channel : channels) {
            if (leadsTo(channel.remoteAddress(), oldMaster)) {
                channel.close();
                cut++;
            }
        }
        return cut;
    }

    private boolean leadsToReplacedMaster(SocketAddress remote) {
        long now = nanoTime.getAsLong();
        replaced.values().removeIf(until -> until - now < 0);
        return replaced.keySet().stream().anyMatch(master -> leadsTo(remote, master));
    }

    private static boolean leadsTo(SocketAddress remote, String hostAndPort) {
        if (!(remote instanceof InetSocketAddress address)) {
            return false;
        }
        String port = ":" + address.getPort();
        if (!hostAndPort.endsWith(port)) {
            return false;
        }
        String host = hostAndPort.substring(0, hostAndPort.length() - port.length());
        return host.equalsIgnoreCase(address.getHostString())
                || address.getAddress() != null && host.equals(address.getAddress().getHostAddress());
    }

    private final class RefuseReplacedMaster extends ChannelInboundHandlerAdapter {
        @Override
        public void channelActive(ChannelHandlerContext context) {
            if (leadsToReplacedMaster(context.channel().remoteAddress())) {
                log.debug("Link to {} closed: Sentinel has replaced that master", context.channel().remoteAddress());
                context.close();
                return;
            }
            context.fireChannelActive();
        }
    }
}
