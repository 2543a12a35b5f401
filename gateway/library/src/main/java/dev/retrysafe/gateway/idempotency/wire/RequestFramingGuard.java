package dev.retrysafe.gateway.idempotency.wire;

import dev.retrysafe.gateway.idempotency.response.ErrorEnvelope;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.Optional;

/**
 * Sits right after Netty's HTTP/1.1 decoder, one per connection, so that a request reaches the gateway only as it
 * was framed. Netty reports a body it cannot decode (a bad chunk size, LF-only chunk lines, a bad trailer) on a last
 * content whose decoder result is a failure, and Reactor Netty then ends the body stream as if it were complete: a
 * filter would forward a truncated body. Here such a body ends with {@link MalformedRequestBody} instead, and the
 * connection is closed after the answer (the decoder discards the rest of it). A request whose Transfer-Encoding is
 * not exactly {@code chunked} has no trustworthy length: it is answered 400 here, before any route sees it.
 */
final class RequestFramingGuard extends ChannelDuplexHandler {
    static final String NAME = "idempotency.requestFramingGuard";

    private final Clock clock;
    /** The connection was refused at a request head: what follows is not read as requests. */
    private boolean discarding;
    /** The current request's body broke: the connection ends with its answer. */
    private boolean bodyBroken;

    RequestFramingGuard(Clock clock) {
        this.clock = clock;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (discarding) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (msg instanceof HttpRequest request && request.decoderResult().isSuccess()) {
            Optional<String> problem = TransferCoding.problem(request.headers().getAll(HttpHeaderNames.TRANSFER_ENCODING));
            if (problem.isPresent()) {
                discarding = true;
                ReferenceCountUtil.release(msg);
                ctx.writeAndFlush(refusal(problem.get())).addListener(ChannelFutureListener.CLOSE);
                return;
            }
        }
        if (!(msg instanceof HttpRequest) && msg instanceof HttpContent content && content.decoderResult().isFailure()) {
            bodyBroken = true;
            Throwable cause = content.decoderResult().cause();
            ReferenceCountUtil.release(msg);
            // Reactor Netty's channel handler hands an exception to the request's body stream as its error.
            ctx.fireExceptionCaught(new MalformedRequestBody(cause));
            return;
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!bodyBroken) {
            ctx.write(msg, promise);
            return;
        }
        if (msg instanceof HttpResponse response) {
            HttpUtil.setKeepAlive(response, false);
        }
        if (msg instanceof LastHttpContent) {
            ChannelPromise written = promise.unvoid();
            written.addListener(ChannelFutureListener.CLOSE);
            ctx.write(msg, written);
            return;
        }
        ctx.write(msg, promise);
    }

    private FullHttpResponse refusal(String message) {
        byte[] body = ErrorEnvelope.json(400, message, OffsetDateTime.now(clock));
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_REQUEST,
                Unpooled.wrappedBuffer(body));
        response.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.length)
                .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        return response;
    }
}
