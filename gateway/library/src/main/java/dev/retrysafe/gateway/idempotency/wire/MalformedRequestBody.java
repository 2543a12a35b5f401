package dev.retrysafe.gateway.idempotency.wire;

import dev.retrysafe.gateway.idempotency.response.GatewayError;
import org.springframework.http.HttpStatus;
import org.springframework.web.server.ResponseStatusException;

/**
 * The request body could not be decoded (broken chunk framing, a bad trailer): the body stream ends with this
 * error instead of ending as if the body were complete. A 400 by its type, so no route answers it with a 5xx.
 */
public final class MalformedRequestBody extends ResponseStatusException {
    public static final String MESSAGE = GatewayError.MALFORMED_BODY_MESSAGE;

    public MalformedRequestBody(Throwable cause) {
        super(HttpStatus.BAD_REQUEST, MESSAGE, cause);
    }
}
