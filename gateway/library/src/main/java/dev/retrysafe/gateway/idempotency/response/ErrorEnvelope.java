package dev.retrysafe.gateway.idempotency.response;

import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;

/**
 * The Onboarding API's error body, used for every response the gateway itself produces:
 * {@code {"status":{"status":"FAILED","reason":409,"message":"...","date":"2026-08-17T10:14:03-05:00"}}}.
 * The date has seconds and a numeric offset ({@code +00:00}, never {@code Z}), as in the contract.
 */
public final class ErrorEnvelope {
    private static final DateTimeFormatter DATE = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ssxxx");

    private ErrorEnvelope() {
    }

    public static byte[] json(int status, String message, OffsetDateTime at) {
        String body = "{\"status\":{\"status\":\"FAILED\",\"reason\":" + status + ",\"message\":" + quote(message)
                + ",\"date\":\"" + DATE.format(at.truncatedTo(ChronoUnit.SECONDS)) + "\"}}";
        return body.getBytes(StandardCharsets.UTF_8);
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
