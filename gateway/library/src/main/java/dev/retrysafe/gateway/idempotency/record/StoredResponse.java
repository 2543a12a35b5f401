package dev.retrysafe.gateway.idempotency.record;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The upstream's final answer as it will be replayed. {@code bodyOmitted} marks a response whose body was
 * larger than the route's storage limit: the status and headers are known, the body is not kept.
 */
public record StoredResponse(int status, List<ResponseHeader> headers, byte[] body, boolean bodyOmitted) {
    public StoredResponse {
        if (status < 100 || status > 999) {
            throw new IllegalArgumentException("Not an HTTP status: " + status);
        }
        headers = List.copyOf(headers);
        Objects.requireNonNull(body, "body");
    }

    public boolean isSuccessful() {
        return status >= 200 && status < 300;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredResponse other && status == other.status && bodyOmitted == other.bodyOmitted
                && headers.equals(other.headers) && Arrays.equals(body, other.body);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, headers, Arrays.hashCode(body), bodyOmitted);
    }

    @Override
    public String toString() {
        return "StoredResponse[status=" + status + ", headers=" + headers.size() + ", bodyBytes=" + body.length
                + (bodyOmitted ? ", bodyOmitted" : "") + "]";
    }
}
