package dev.retrysafe.gateway.idempotency.filter;

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
 * result is marked as having no replayable body.
 */
final class CapturingResponse extends ServerHttpResponseDecorator {

    /** What happens to the upstream's answer once it is known. */
    interface Outcome {
        /** Whether this status is a result to store; otherwise {@link #notAResult()} runs before writing. */
        boolean isFinal(int status);

        Mono<Void> notAResult();

        /** The whole body went to the client; store it. Must not fail. */
        Mono<Void> completed(int status, List<ResponseHeader> headers, byte[] body, boolean bodyOmitted);

        /** The body broke off (upstream error or client gone) before it was complete. */
        void aborted(Throwable cause);
    }

    private final int limit;
    private final Outcome outcome;
    private final AtomicBoolean seen = new AtomicBoolean();

    CapturingResponse(ServerHttpResponse delegate, int limit, Outcome outcome) {
        super(delegate);
        this.limit = limit;
        this.outcome = outcome;
    }

    /** Whether the upstream's answer reached this response at all. */
    boolean outcomeSeen() {
        return seen.get();
    }

    @Override
    public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
        return intercept(copy -> super.writeWith(Flux.from(body).doOnNext(copy::append)),
                () -> super.writeWith(body));
    }

    @Override
    public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> body) {
        return intercept(copy -> super.writeAndFlushWith(Flux.from(body).map(part -> Flux.from(part).doOnNext(copy::append))),
                () -> super.writeAndFlushWith(body));
    }

    @Override
    public Mono<Void> setComplete() {
        return intercept(copy -> super.setComplete(), super::setComplete);
    }

    /**
     * The first write decides: a status that is not a result is released and passed through, a result is written
     * while copied, then stored. Later writes (none are expected) pass through.
     */
    private Mono<Void> intercept(Function<BoundedCopy, Mono<Void>> copyingWrite, Supplier<Mono<Void>> plainWrite) {
        if (!seen.compareAndSet(false, true)) {
            return plainWrite.get();
        }
        int status = status();
        if (!outcome.isFinal(status)) {
            return outcome.notAResult().then(Mono.defer(plainWrite));
        }
        List<ResponseHeader> headers = headerSnapshot();
        BoundedCopy copy = new BoundedCopy(limit);
        return finish(copyingWrite.apply(copy), status, headers, copy);
    }

    private Mono<Void> finish(Mono<Void> write, int status, List<ResponseHeader> headers, BoundedCopy copy) {
        return write
                .doOnError(outcome::aborted)
                .doOnCancel(() -> outcome.aborted(null))
                .then(Mono.defer(() -> outcome.completed(status, headers, copy.bytes(), copy.overflowed())));
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
        private boolean overflowed;

        BoundedCopy(int limit) {
            this.limit = limit;
        }

        synchronized void append(DataBuffer buffer) {
            if (overflowed) {
                return;
            }
            int readable = buffer.readableByteCount();
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
    }
}
