package dev.retrysafe.gateway.idempotency.filter;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.UnpooledByteBufAllocator;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.NettyDataBuffer;
import org.springframework.core.io.buffer.NettyDataBufferFactory;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;

/** The upstream body is read to its end however the client's write treats it. */
class DrainingBodyTest {
    private final NettyDataBufferFactory buffers = new NettyDataBufferFactory(UnpooledByteBufAllocator.DEFAULT);
    private final AtomicInteger ended = new AtomicInteger();
    private final List<NettyDataBuffer> parts = List.of(part("{\"processId\":"), part("\"p-1\""), part("}"));
    private final DrainingBody body = new DrainingBody(Flux.fromIterable(parts), ended::incrementAndGet,
            error -> { });

    @Test
    void aWriteThatTookOnlyTheFirstPartAndEndedWithoutCancellingLeavesTheRestToBeDrained() {
        List<DataBuffer> written = new ArrayList<>();
        // Spring's ChannelSendOperator does this when the write to a closed connection fails after the first item.
        body.subscribe(requestingOne(written::add));
        assertThat(written).hasSize(1);
        assertThat(ended).as("the body is not ended while its write holds it").hasValue(0);

        body.drainRest();

        assertThat(ended).as("the rest is read, so the body ends and the exchange settles").hasValue(1);
        assertThat(parts.subList(1, 3)).allSatisfy(part -> assertThat(part.getNativeBuffer().refCnt()).isZero());
    }

    @Test
    void aWriteThatNeverSubscribedLeavesTheWholeBodyToBeDrained() {
        body.drainRest();

        assertThat(ended).hasValue(1);
        assertThat(parts).allSatisfy(part -> assertThat(part.getNativeBuffer().refCnt()).isZero());
    }

    @Test
    void aCancelledWriteDrainsTheRestAndALaterDrainEndsNothingTwice() {
        BaseSubscriber<DataBuffer> write = requestingOne(buffer -> { });
        body.subscribe(write);
        write.cancel();
        body.drainRest();

        assertThat(ended).hasValue(1);
    }

    @Test
    void aWriteThatReadTheWholeBodyIsNotDisturbedByTheDrain() {
        List<String> written = new ArrayList<>();
        body.subscribe(new BaseSubscriber<DataBuffer>() {
            @Override
            protected void hookOnNext(DataBuffer buffer) {
                written.add(buffer.toString(StandardCharsets.UTF_8));
            }
        });
        body.drainRest();

        assertThat(String.join("", written)).isEqualTo("{\"processId\":\"p-1\"}");
        assertThat(ended).hasValue(1);
    }

    /** A write that asks for one buffer and then neither asks for more nor cancels on its own. */
    private static BaseSubscriber<DataBuffer> requestingOne(java.util.function.Consumer<DataBuffer> onNext) {
        return new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(Subscription subscription) {
                subscription.request(1);
            }

            @Override
            protected void hookOnNext(DataBuffer buffer) {
                onNext.accept(buffer);
            }
        };
    }

    private NettyDataBuffer part(String text) {
        return (NettyDataBuffer) buffers.wrap(text.getBytes(StandardCharsets.UTF_8));
    }
}
