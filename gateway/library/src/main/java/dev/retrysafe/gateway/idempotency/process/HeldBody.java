package dev.retrysafe.gateway.idempotency.process;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Signal;

/**
 * A response body held back until something has been done with it, when it is small: nothing of the response
 * (headers included, as they are sent with the first body buffer) leaves before {@code whileHeld} has finished.
 * A body larger than {@code maxBytes} passes through unheld, and so does one that breaks off: what came of it goes
 * out, then the error, so the client sees it broken, never short.
 */
public final class HeldBody {
    private HeldBody() {
    }

    /** Held until {@code whileHeld}, given the whole body, has finished (a status read's end recorded). */
    static Flux<DataBuffer> releasedAfter(Publisher<? extends DataBuffer> body, int maxBytes,
            Function<byte[], Mono<Void>> whileHeld) {
        return held(body, maxBytes, whole -> whileHeld.apply(bytes(whole)));
    }

    /** Held until {@code release} completes or fails (a write's record and process link stored). */
    public static Flux<DataBuffer> releasedAfter(Publisher<? extends DataBuffer> body, int maxBytes,
            Mono<Void> release) {
        return held(body, maxBytes, whole -> release.onErrorResume(e -> Mono.empty()));
    }

    private static Flux<DataBuffer> held(Publisher<? extends DataBuffer> body, int maxBytes,
            Function<List<DataBuffer>, Mono<Void>> whileHeld) {
        return Flux.defer(() -> {
            AtomicLong seen = new AtomicLong();
            // The first list is the whole body and its end when within the bound; else up to the buffer that crossed
            // it, or up to the error.
            return Flux.<DataBuffer>from(body)
                    .materialize()
                    .bufferUntil(signal -> !signal.isOnNext()
                            || seen.addAndGet(signal.get().readableByteCount()) > maxBytes)
                    .doOnDiscard(Signal.class, HeldBody::release)
                    .switchOnFirst((first, all) -> {
                        Flux<DataBuffer> buffers = all.concatMapIterable(list -> list).dematerialize();
                        if (!first.hasValue() || !first.get().get(first.get().size() - 1).isOnComplete()) {
                            return buffers;
                        }
                        List<Signal<DataBuffer>> whole = first.get();
                        List<DataBuffer> wholeBody = whole.stream().filter(Signal::isOnNext).map(Signal::get).toList();
                        AtomicBoolean handedOn = new AtomicBoolean();
                        return whileHeld.apply(wholeBody)
                                .thenMany(Flux.defer(() -> {
                                    handedOn.set(true);
                                    return buffers;
                                }))
                                // Cancelled while held (the client left): nobody else will release them.
                                .doOnCancel(() -> {
                                    if (!handedOn.get()) {
                                        wholeBody.forEach(DataBufferUtils::release);
                                    }
                                });
                    });
        });
    }

    private static void release(Signal<?> signal) {
        if (signal.get() instanceof DataBuffer buffer) {
            DataBufferUtils.release(buffer);
        }
    }

    private static int size(List<DataBuffer> buffers) {
        return buffers.stream().mapToInt(DataBuffer::readableByteCount).sum();
    }

    private static byte[] bytes(List<DataBuffer> buffers) {
        byte[] bytes = new byte[size(buffers)];
        int at = 0;
        for (DataBuffer buffer : buffers) {
            int length = buffer.readableByteCount();
            buffer.toByteBuffer(buffer.readPosition(), ByteBuffer.wrap(bytes), at, length);
            at += length;
        }
        return bytes;
    }
}
