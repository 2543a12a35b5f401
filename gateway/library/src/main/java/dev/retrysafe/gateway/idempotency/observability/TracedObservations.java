package dev.retrysafe.gateway.idempotency.observability;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationView;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.handler.TracingObservationHandler.TracingContext;

/**
 * Whether an observation is part of a sampled trace, as Micrometer Tracing decided for its span (or its nearest
 * parent's: an observation no tracing handler took has no span of its own). Only loaded with Micrometer Tracing.
 */
public final class TracedObservations {
    private TracedObservations() {
    }

    public static boolean sampled(Observation observation) {
        for (ObservationView view = observation; view != null; view = view.getContextView().getParentObservation()) {
            TracingContext tracing = view.getContextView().get(TracingContext.class);
            Span span = tracing == null ? null : tracing.getSpan();
            if (span != null) {
                return Boolean.TRUE.equals(span.context().sampled());
            }
        }
        return false;
    }
}
