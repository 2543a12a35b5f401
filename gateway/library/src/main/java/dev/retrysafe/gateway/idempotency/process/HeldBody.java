package dev.retrysafe.gateway.idempotency.process;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A response body held back until something has been done with it, when it is small: nothing of the response
 * (headers included, as they are sent with the first body buffer) leaves before {@code whileHeld} has finished.
 * A body larger than {@code maxBytes} passes through unheld and unread.
 */
final class HeldBody {
    private HeldBody() {
    }

    static Flux<DataBuffer> releasedAfter(Publisher<? extends DataBuffer> body, int maxBytes,
            Function<byte[], Mono<Void>> whileHeld) {
        return Flux.defer(() -> {
            AtomicInteger seen = new AtomicInteger();
            // The first list is the whole body when it is within the bound; else the part that crossed it.
            return Flux.<DataBuffer>from(body)
                    .bufferUntil(buffer -> seen.addAndGet(buffer.readableByteCount()) > maxBytes)
                    .switchOnFirst((first, all) -> {
                        Flux<DataBuffer> buffers = all.concatMapIterable(list -> list);
                        if (!first.hasValue() || size(first.get()) > maxBytes) {
                            return buffers;
                        }
                        List<DataBuffer> whole = first.get();
                        AtomicBoolean handedOn = new AtomicBoolean();
                        return whileHeld.apply(bytes(whole))
                                .thenMany(Flux.defer(() -> {
                                    handedOn.set(true);
                                    return buffers;
                                }))
                                // Cancelled while held (the client left): nobody else will release them.
                                .doOnCancel(() -> {
                                    if (!handedOn.get()) {
                                        whole.forEach(DataBufferUtils::release);
                                    }
                                });
                    });
        });
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
