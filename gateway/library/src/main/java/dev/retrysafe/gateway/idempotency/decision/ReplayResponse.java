package dev.retrysafe.gateway.idempotency.decision;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The answer a replay gives, per the Onboarding contract: a 2xx original comes back with the replay status
 * (200 instead of 202) and without {@code Location}, since nothing new was created; any other final status is
 * replayed as it was. Every replay says so in {@code Idempotency-Replayed: true}. Once the process the original
 * started has ended, {@code Retry-After} goes: there is nothing left to wait for.
 *
 * @param originalStatus the status that was stored, which a refusal to replay names
 */
public record ReplayResponse(int status, List<ResponseHeader> headers, byte[] body, int originalStatus) {
    public static final String REPLAYED_HEADER = "Idempotency-Replayed";

    public static ReplayResponse of(StoredResponse stored, int replayStatus) {
        return of(stored, replayStatus, false);
    }

    public static ReplayResponse of(StoredResponse stored, int replayStatus, boolean processEnded) {
        boolean success = stored.isSuccessful();
        List<ResponseHeader> headers = new ArrayList<>(stored.headers().size() + 1);
        for (ResponseHeader header : stored.headers()) {
            if (header.named(REPLAYED_HEADER) || (success && header.named("Location"))
                    || (processEnded && header.named("Retry-After"))) {
                continue;
            }
            headers.add(header);
        }
        headers.add(new ResponseHeader(REPLAYED_HEADER, "true"));
        return new ReplayResponse(success ? replayStatus : stored.status(), List.copyOf(headers), stored.body(),
                stored.status());
    }

    /**
     * Why HTTP cannot carry this replay, if it cannot: a status that is not final (1xx), or a header no HTTP/1.1
     * message may hold (written into the store by hand, or by an operator API that did not check it yet). Names a
     * header only when its name is a token, never a value: the reason is logged.
     */
    public Optional<String> unwritable() {
        if (status < 200) {
            return Optional.of("status " + status + " is not a final response");
        }
        for (ResponseHeader header : headers) {
            if (!header.isWritable()) {
                return Optional.of(header.hasTokenName()
                        ? "its " + header.name() + " header has a value HTTP cannot carry"
                        : "one of its header names is not an HTTP token");
            }
        }
        return Optional.empty();
    }
}
