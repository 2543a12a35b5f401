package dev.retrysafe.gateway.idempotency.store.redis;

/**
 * A reservation was written on the Redis master but not acknowledged by enough replicas in time, so it was undone:
 * forwarding the request would have risked a failover that forgets it and lets a retry run it again.
 */
public final class ReplicaAcknowledgementMissing extends RuntimeException {

    ReplicaAcknowledgementMissing(String what, long replicas, ReplicaAcks acks) {
        super(what + " acknowledged by " + replicas + " of the " + acks.required() + " replica(s) required "
                + "(idempotency.replica-acks) within " + acks.timeoutMillis() + " ms");
    }
}
