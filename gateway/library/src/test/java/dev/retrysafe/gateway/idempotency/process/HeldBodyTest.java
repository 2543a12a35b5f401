package dev.retrysafe.gateway.idempotency.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.core.io.buffer.NettyDataBuffer;
import org.springframework.core.io.buffer.NettyDataBufferFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/** The hold that makes a status read wait for its process end to be recorded, on plain buffers. */
class HeldBodyTest {
    static final DefaultDataBufferFactory buffers = DefaultDataBufferFactory.sharedInstance;

    @Test
    void aSmallBodyIsReleasedOnlyAfterWhatIsDoneWhileItIsHeld() {
        Sinks.Empty<Void> recorded = Sinks.empty();
        AtomicReference<String> seen = new AtomicReference<>();
        List<String> released = new ArrayList<>();

        Flux.from(HeldBody.releasedAfter(body("{\"status\":", "\"COMPLETED\"}"), 64, bytes -> {
            seen.set(new String(bytes, StandardCharsets.UTF_8));
            return recorded.asMono();
        })).map(HeldBodyTest::text).subscribe(released::add);

        assertThat(seen.get()).isEqualTo("{\"status\":\"COMPLETED\"}");
        assertThat(released).isEmpty();
        recorded.tryEmitEmpty();
        assertThat(released).containsExactly("{\"status\":", "\"COMPLETED\"}");
    }

    @Test
    void aBodyOverTheBoundPassesUnheldAndUnread() {
        AtomicReference<byte[]> seen = new AtomicReference<>();

        List<String> released = Flux.from(HeldBody.releasedAfter(body("0123456789", "0123456789", "0123"), 16,
                bytes -> Mono.fromRunnable(() -> seen.set(bytes)))).map(HeldBodyTest::text).collectList().block();

        assertThat(released).containsExactly("0123456789", "0123456789", "0123");
        assertThat(seen.get()).isNull();
    }

    @Test
    void aHeldBodyIsFreedWhenTheClientLeavesWhileItIsHeld() {
        // Reference-counted buffers, as Netty hands them over: a held one nobody frees would leak.
        NettyDataBufferFactory netty = new NettyDataBufferFactory(UnpooledByteBufAllocator.DEFAULT);
        List<NettyDataBuffer> parts = List.of(
                netty.wrap(Unpooled.copiedBuffer("{\"status\":", StandardCharsets.UTF_8)),
                netty.wrap(Unpooled.copiedBuffer("\"COMPLETED\"}", StandardCharsets.UTF_8)));

        Disposable client = Flux.from(HeldBody.releasedAfter(Flux.fromIterable(parts), 64, bytes -> Mono.never()))
                .subscribe();
        client.dispose();

        assertThat(parts).allSatisfy(part -> assertThat(part.getNativeBuffer().refCnt()).isZero());
    }

    @Test
    void aBodyThatBreaksOffWhileHeldReachesTheClientBrokenNotShort() {
        List<String> released = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();

        Flux.from(HeldBody.releasedAfter(body("{\"processId\":").concatWith(Flux.error(new IllegalStateException(
                "upstream reset"))), 64, Mono.never())).map(HeldBodyTest::text).subscribe(released::add, failure::set);

        assertThat(released).as("what came of it, unheld").containsExactly("{\"processId\":");
        assertThat(failure.get()).hasMessage("upstream reset");
    }

    @Test
    void aWholeBodyIsReleasedWhenItsReleaseCompletes() {
        Sinks.Empty<Void> linked = Sinks.empty();
        List<String> released = new ArrayList<>();

        Flux.from(HeldBody.releasedAfter(body("{\"processId\":", "\"p-1\"}"), 64, linked.asMono()))
                .map(HeldBodyTest::text).subscribe(released::add);

        assertThat(released).isEmpty();
        linked.tryEmitEmpty();
        assertThat(released).containsExactly("{\"processId\":", "\"p-1\"}");
    }

    @Test
    void anEmptyBodyPassesAsIs() {
        List<String> released = Flux.from(HeldBody.releasedAfter(Flux.empty(), 16, bytes -> Mono.empty()))
                .map(HeldBodyTest::text).collectList().block();

        assertThat(released).isEmpty();
    }

    private static Flux<DataBuffer> body(String... parts) {
        return Flux.fromArray(parts).map(part -> buffers.wrap(part.getBytes(StandardCharsets.UTF_8)));
    }

    private static String text(DataBuffer buffer) {
        String text = buffer.toString(StandardCharsets.UTF_8);
        DataBufferUtils.release(buffer);
        return text;
    }
}
