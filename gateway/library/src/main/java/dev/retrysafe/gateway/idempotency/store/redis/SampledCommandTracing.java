package dev.retrysafe.gateway.idempotency.store.redis;

import io.lettuce.core.tracing.TraceContext;
import io.lettuce.core.tracing.TraceContextProvider;
import io.lettuce.core.tracing.Tracer;
import io.lettuce.core.tracing.TracerProvider;
import io.lettuce.core.tracing.Tracing;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import java.net.SocketAddress;
import java.util.function.Predicate;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

/**
 * Lettuce's tracing, with a Redis command observed only when the trace it runs in is sampled. Lettuce's own
 * Micrometer tracing creates an observation (a timer, and a span) for every command, traced or not, and gives it its
 * parent only after the registry's predicates have run, so no predicate can tell a sampled request's commands from
 * the rest. A guarded request makes one or two Redis calls: without this, each would cost an observation of its own
 * on top of the request's. Commands outside any observation (background polls, health) are not observed either:
 * they would otherwise each start a trace of their own.
 */
public final class SampledCommandTracing implements Tracing {
    /** The context of a command whose trace is not sampled, or that runs outside any observation. */
    private static final TraceContext NOT_SAMPLED = new TraceContext() {
    };
    private static final Tracer.Span NO_SPAN = Tracing.disabled().getTracerProvider().getTracer().nextSpan();

    private final ObservationRegistry registry;
    private final Tracing observed;
    private final Predicate<Observation> sampled;
    private final TraceContextProvider contexts = new SampledContexts();
    private final Tracer tracer = new SampledTracer();

    /**
     * @param observed Lettuce's tracing that observes every command (its {@code MicrometerTracing})
     * @param sampled  whether an observation belongs to a sampled trace
     */
    public SampledCommandTracing(ObservationRegistry registry, Tracing observed, Predicate<Observation> sampled) {
        this.registry = registry;
        this.observed = observed;
        this.sampled = sampled;
    }

    @Override
    public TracerProvider getTracerProvider() {
        return () -> tracer;
    }

    @Override
    public TraceContextProvider initialTraceContextProvider() {
        return contexts;
    }

    @Override
    public boolean isEnabled() {
        return true;
    }

    @Override
    public boolean includeCommandArgsInSpanTags() {
        return observed.includeCommandArgsInSpanTags();
    }

    @Override
    public Endpoint createEndpoint(SocketAddress socketAddress) {
        return observed.createEndpoint(socketAddress);
    }

    private boolean sampledParent(Observation observation) {
        return observation != null && !observation.isNoop() && sampled.test(observation);
    }

    private static Observation observationIn(ContextView context) {
        if (context.hasKey(Observation.class)) {
            return context.get(Observation.class);
        }
        return context.getOrDefault(ObservationThreadLocalAccessor.KEY, null);
    }

    /** Hands over Lettuce's own context (its parent observation) only for a sampled trace. */
    private final class SampledContexts implements TraceContextProvider {
        @Override
        public TraceContext getTraceContext() {
            return sampledParent(registry.getCurrentObservation())
                    ? observed.initialTraceContextProvider().getTraceContext() : NOT_SAMPLED;
        }

        @Override
        public Mono<TraceContext> getTraceContextLater() {
            return Mono.deferContextual(context -> sampledParent(observationIn(context))
                    ? observed.initialTraceContextProvider().getTraceContextLater()
                    : Mono.just(NOT_SAMPLED));
        }
    }

    private final class SampledTracer extends Tracer {
        @Override
        public Span nextSpan() {
            return NO_SPAN;
        }

        @Override
        public Span nextSpan(TraceContext context) {
            return context == null || context == NOT_SAMPLED
                    ? NO_SPAN : observed.getTracerProvider().getTracer().nextSpan(context);
        }
    }
}
