package dev.retrysafe.gateway.idempotency.filter;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Operators;

/**
 * The upstream's response body on its way to a client that may go away. When the client's side cancels (it hung
 * up, its write failed), the upstream is not cancelled but drained: the gateway still reads the whole answer, so
 * that it can be stored for the client's retry. The end of the upstream body, not the client, settles the outcome.
 */
final class DrainingBody implements Publisher<DataBuffer> {
    private final Publisher<? extends DataBuffer> source;
    private final Runnable onComplete;
    private final Consumer<Throwable> onError;
    private final AtomicBoolean subscribed = new AtomicBoolean();
    private volatile boolean draining;

    DrainingBody(Publisher<? extends DataBuffer> source, Runnable onComplete, Consumer<Throwable> onError) {
        this.source = source;
        this.onComplete = onComplete;
        this.onError = onError;
    }

    @Override
    public void subscribe(Subscriber<? super DataBuffer> downstream) {
        if (!subscribed.compareAndSet(false, true)) {
            Operators.error(downstream, new IllegalStateException("The response body can be written only once"));
            return;
        }
        source.subscribe(new Relay(downstream));
    }

    /** Reads the body without any client, when the client's write never even subscribed. */
    void drainAlone() {
        if (subscribed.compareAndSet(false, true)) {
            draining = true;
            source.subscribe(new Relay(null));
        }
    }

    private final class Relay implements CoreSubscriber<DataBuffer> {
        private final Subscriber<? super DataBuffer> downstream;

        Relay(Subscriber<? super DataBuffer> downstream) {
            this.downstream = downstream;
        }

        @Override
        public void onSubscribe(Subscription upstream) {
            if (downstream == null) {
                upstream.request(Long.MAX_VALUE);
                return;
            }
            downstream.onSubscribe(new Subscription() {
                @Override
                public void request(long n) {
                    if (!draining) {
                        upstream.request(n);
                    }
                }

                @Override
                public void cancel() {
                    draining = true;
                    upstream.request(Long.MAX_VALUE);
                }
            });
        }

        @Override
        public void onNext(DataBuffer buffer) {
            if (draining) {
                DataBufferUtils.release(buffer);
            } else {
                downstream.onNext(buffer);
            }
        }

        @Override
        public void onError(Throwable error) {
            onError.accept(error);
            if (!draining) {
                downstream.onError(error);
            }
        }

        @Override
        public void onComplete() {
            onComplete.run();
            if (!draining) {
                downstream.onComplete();
            }
        }
    }
}
