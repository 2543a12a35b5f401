package dev.retrysafe.gateway.idempotency.wire;

import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpServerCodec;
import java.time.Clock;
import org.springframework.boot.reactor.netty.NettyServerCustomizer;
import reactor.netty.NettyPipeline;
import reactor.netty.http.server.HttpServer;

/** Puts a {@link RequestFramingGuard} after the HTTP/1.1 decoder of every connection the server accepts. */
public final class RequestFramingCustomizer implements NettyServerCustomizer {
    private final Clock clock;

    public RequestFramingCustomizer(Clock clock) {
        this.clock = clock;
    }

    @Override
    public HttpServer apply(HttpServer server) {
        return server.doOnChannelInit((observer, channel, remoteAddress) -> {
            ChannelPipeline pipeline = channel.pipeline();
            if (pipeline.get(NettyPipeline.HttpCodec) instanceof HttpServerCodec
                    && pipeline.get(RequestFramingGuard.NAME) == null) {
                pipeline.addAfter(NettyPipeline.HttpCodec, RequestFramingGuard.NAME, new RequestFramingGuard(clock));
            }
        });
    }
}
