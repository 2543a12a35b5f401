package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.process.HeldBody;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Supplier;
import org.reactivestreams.Publisher;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Streams the upstream's response to the client unchanged while keeping a copy of at most {@code limit} body
 * bytes. Memory per request is bounded by the limit whatever the response size; past it, the copy stops and the
 * result is marked as having no replayable body. The upstream body is read to its end even if the client goes
 * away (or its write ends without ever reading the body); what happened is reported to the {@link UpstreamExchange},
 * which alone decides the outcome.
 */
final class CapturingResponse extends ServerHttpResponseDecorator {
    private final int limit;
    private final UpstreamExchange upstream;
    private final AtomicBoolean seen = new AtomicBoolean();

    CapturingResponse(ServerHttpResponse delegate, int limit, UpstreamExchange upstream) {
        super(delegate);
        this.limit = limit;
        this.upstream = upstream;
    }

    @Override
    public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
        return intercept(body, super::writeWith, () -> super.writeWith(body));
    }

    @Override
    public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> body) {
        return intercept(Flux.from(body).concatMap(part -> part),
                guarded -> super.writeAndFlushWith(Flux.from(guarded).map(Mono::just)),
                () -> super.writeAndFlushWith(body));
    }

    @Override
    public Mono<Void> setComplete() {
        return intercept(Flux.empty(), guarded -> Flux.from(guarded).then(super.setComplete()), super::setComplete);
    }

    /**
     * The first write decides: a status that is not a result is released (before the client sees it) and passed
     * through; a result is written while copied, and settled when the upstream body ends (a tracked success is held
     * until then). Later writes (none are expected) pass through.
     */
    private Mono<Void> intercept(Publisher<? extends DataBuffer> body,
            Function<Publisher<DataBuffer>, Mono<Void>> clientWrite, Supplier<Mono<Void>> plainWrite) {
        if (!seen.compareAndSet(false, true)) {
            return plainWrite.get();
        }
        int status = status();
        if (!upstream.answered(status)) {
            return upstream.settled().then(Mono.defer(plainWrite));
        }
        List<ResponseHeader> headers = headerSnapshot();
        BoundedCopy copy = new BoundedCopy(limit);
        AtomicBoolean upstreamBroke = new AtomicBoolean();
        DrainingBody guarded = new DrainingBody(Flux.from(body).doOnNext(buffer -> {
            copy.append(buffer);
            upstream.progress();
        }),
                () -> upstream.bodyEnded(status, headers, copy.bytes(), copy.overflowed()),
                error -> {
                    upstreamBroke.set(true);
                    upstream.bodyBroke(error, copy.seen());
                });
        // A tracked 202 reaches the client only once its process link exists (bounded), or a status read at once
        // would find no record to end.
        Publisher<DataBuffer> toClient = upstream.holdsUntilLinked(status)
                ? HeldBody.releasedAfter(guarded, limit, upstream.linked())
                : guarded;
        return clientWrite.apply(toClient)
                .onErrorResume(clientGone -> {
                    if (upstreamBroke.get()) {
                        // The client must see a broken response, not a short one that looks whole.
                        return upstream.settled().then(Mono.error(clientGone));
                    }
                    return Mono.empty();
                })
                // A write to a connection that is already gone can end having read none or only part of the body:
                // read the rest anyway, or the exchange would wait for an end that never comes.
                .then(Mono.fromRunnable(guarded::drainRest))
                .then(upstream.answerMayEnd());
    }

    private int status() {
        HttpStatusCode code = getStatusCode();
        return code == null ? 200 : code.value();
    }

    private List<ResponseHeader> headerSnapshot() {
        List<ResponseHeader> snapshot = new ArrayList<>();
        getHeaders().forEach((name, values) -> values.forEach(value -> snapshot.add(new ResponseHeader(name, value))));
        return snapshot;
    }

    /** A copy of the body that stops growing at the limit. */
    private static final class BoundedCopy {
        private final int limit;
        private byte[] bytes = new byte[0];
        private int size;
        private long seen;
        private boolean overflowed;

        BoundedCopy(int limit) {
            this.limit = limit;
        }

        synchronized void append(DataBuffer buffer) {
            int readable = buffer.readableByteCount();
            seen += readable;
            if (overflowed) {
                return;
            }
            if (size + readable > limit) {
                overflowed = true;
                bytes = new byte[0];
                size = 0;
                return;
            }
            if (size + readable > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.min(limit, Math.max(size + readable, bytes.length * 2)));
            }
            // readableByteBuffers() leaves the read position alone: the client still gets every byte.
            try (DataBuffer.ByteBufferIterator parts = buffer.readableByteBuffers()) {
                while (parts.hasNext()) {
                    ByteBuffer part = parts.next();
                    int length = part.remaining();
                    part.get(bytes, size, length);
                    size += length;
                }
            }
        }

        synchronized byte[] bytes() {
            return size == bytes.length ? bytes : Arrays.copyOf(bytes, size);
        }

        synchronized boolean overflowed() {
            return overflowed;
        }

        synchronized long seen() {
            return seen;
        }
    }
}
