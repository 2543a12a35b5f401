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
    private volatile Subscription upstream;

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

    /**
     * The client's write has ended, however it ended: whatever of the body it left unread is read and dropped. A
     * write can end without reading the body at all (the connection was already gone), or after taking only its
     * first part without cancelling (Spring's write operator does not cancel its source when the write itself
     * fails); either way nobody else would read the rest, and the exchange would wait for an end that never comes.
     */
    void drainRest() {
        draining = true;
        if (subscribed.compareAndSet(false, true)) {
            source.subscribe(new Relay(null));
            return;
        }
        Subscription subscription = upstream;
        if (subscription != null) {
            subscription.request(Long.MAX_VALUE);
        }
    }

    private final class Relay implements CoreSubscriber<DataBuffer> {
        private final Subscriber<? super DataBuffer> downstream;

        Relay(Subscriber<? super DataBuffer> downstream) {
            this.downstream = downstream;
        }

        @Override
        public void onSubscribe(Subscription subscription) {
            upstream = subscription;
            if (downstream == null) {
                subscription.request(Long.MAX_VALUE);
                return;
            }
            downstream.onSubscribe(new Subscription() {
                @Override
                public void request(long n) {
                    if (!draining) {
                        subscription.request(n);
                    }
                }

                @Override
                public void cancel() {
                    draining = true;
                    subscription.request(Long.MAX_VALUE);
                }
            });
            if (draining) {
                // drainRest() ran between subscribe and here.
                subscription.request(Long.MAX_VALUE);
            }
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
