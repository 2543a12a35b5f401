package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.decision.ReplayResponse;
import dev.retrysafe.gateway.idempotency.observability.RequestOutcome;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.store.StoredResponseUnreadable;

/**
 * What the gate decided for one guarded request. Every branch returns exactly one of these, and the filter applies
 * it in one place: that place writes the response, sets the request report's outcome and emits the event, so an
 * outcome cannot be answered one way and counted another.
 */
sealed interface Answer {

    /** The scope was reserved for this request: it goes to the upstream, and {@link UpstreamExchange} settles it. */
    record Forward() implements Answer {
    }

    /** The first request's response, sent again. */
    record Replay(ReplayResponse response) implements Answer {
    }

    /** An answer of the gateway's own: a conflict (mismatch, still in flight, uncertain) or a refusal. */
    record Refusal(RequestOutcome outcome, GatewayError error) implements Answer {
    }

    /** The record holds a response this gateway cannot read (a key it no longer has): never forwarded again. */
    record ReplayUnreadable(StoredResponseUnreadable cause) implements Answer {
    }

    /** The store could not be asked: refused with 503, or forwarded unprotected when the route says so. */
    record StoreUnavailable(Throwable cause) implements Answer {
    }
}
