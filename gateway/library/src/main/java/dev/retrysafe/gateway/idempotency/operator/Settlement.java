package dev.retrysafe.gateway.idempotency.operator;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;

/**
 * An operator's request to settle a record by hand, checked before anything is stored. What it carries ends up
 * where a bad value does lasting harm: {@code contentType} in the header of every later replay of the key (a CR/LF
 * there and each one would fail), {@code reason} in the record and the log (a line break there forges log lines).
 *
 * @param action      {@code release} or {@code complete}, in any case
 * @param reason      why, one printable line of at most {@value #MAX_REASON_LENGTH} characters
 * @param status      the final status {@code complete} stores (200-599)
 * @param contentType the stored response's media type, if it has a body worth typing
 */
public record Settlement(String action, String reason, @Nullable Integer status, @Nullable String body,
        @Nullable String contentType) {
    static final int MAX_REASON_LENGTH = 500;

    /** Why the request is refused, naming the field to fix. */
    public record Invalid(String field, String message) {
    }

    public boolean completes() {
        return "complete".equals(action.toLowerCase(Locale.ROOT));
    }

    /** The first thing wrong with the request, or empty when it may be applied. */
    public Optional<Invalid> invalid() {
        if (reason.isBlank()) {
            return invalid("reason", "reason must not be blank");
        }
        if (reason.length() > MAX_REASON_LENGTH) {
            return invalid("reason", "reason must be at most " + MAX_REASON_LENGTH + " characters");
        }
        if (!LogText.isOnePrintableLine(reason)) {
            return invalid("reason", "reason must be one line of printable characters");
        }
        if (!completes() && !"release".equals(action.toLowerCase(Locale.ROOT))) {
            return invalid("action", "action must be release or complete");
        }
        if (!completes()) {
            return Optional.empty();
        }
        if (status == null || status < 200 || status > 599) {
            return invalid("status", "complete needs a final HTTP status (200-599)");
        }
        if (contentType != null && !isMediaType(contentType)) {
            return invalid("contentType", "contentType must be one media type, such as application/json");
        }
        return Optional.empty();
    }

    /** The result {@code complete} stores; only for a valid settlement that completes. */
    public StoredResponse response() {
        List<ResponseHeader> headers = contentType == null ? List.of()
                : List.of(new ResponseHeader("Content-Type", contentType));
        return new StoredResponse(status, headers, body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8),
                false);
    }

    private static Optional<Invalid> invalid(String field, String message) {
        return Optional.of(new Invalid(field, message));
    }

    /**
     * A header value HTTP can carry that also parses as one concrete media type. Parsing alone is not enough: it
     * accepts CR/LF inside a quoted parameter. ASCII only, as media types are.
     */
    private static boolean isMediaType(String text) {
        if (!text.chars().allMatch(c -> c < 0x80) || !new ResponseHeader("Content-Type", text).isWritable()) {
            return false;
        }
        try {
            return MediaType.parseMediaType(text).isConcrete();
        } catch (InvalidMediaTypeException notOne) {
            return false;
        }
    }
}
