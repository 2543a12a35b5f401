package dev.retrysafe.gateway.idempotency.store;

/**
 * A store call that never left this gateway instance: the client library refused it before writing it (no
 * connection yet, or disconnected and rejecting commands). Unlike a call that timed out, nothing of it can run in
 * the store later, so there is nothing to undo.
 */
public final class StoreCallNotSent extends RuntimeException {
    public StoreCallNotSent(Throwable cause) {
        super(cause.getMessage(), cause);
    }
}
