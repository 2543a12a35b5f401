package dev.retrysafe.gateway.idempotency.process;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * How a route's deferred writes report their end, as in the Onboarding API: a 202 carries a process id, and
 * {@code GET /processes/{processId}} shows PENDING until a terminal status. The key stays bound until the process
 * ends (at most {@code maxRetention}) and then for the retention, as the contract counts "24 hours from the end of
 * the process".
 *
 * @param statusUri      path template of the status resource, with {@code {processId}}
 * @param idPointer      JSON pointer to the process id in the write's response
 * @param statusPointer  JSON pointer to the status in the status resource
 * @param terminalValues statuses that end a process
 * @param maxRetention   hard cap on how long a key stays bound while its process is unfinished
 */
public record ProcessTracking(String statusUri, String idPointer, String statusPointer, Set<String> terminalValues,
        Duration maxRetention) {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String PLACEHOLDER = "{processId}";

    public ProcessTracking {
        Objects.requireNonNull(statusUri, "process-status-uri");
        if (!statusUri.startsWith("/") || !statusUri.contains(PLACEHOLDER)) {
            throw new IllegalArgumentException("process-status-uri must be a path containing {processId}, was " + statusUri);
        }
        Objects.requireNonNull(idPointer, "process-id-pointer");
        Objects.requireNonNull(statusPointer, "process-status-pointer");
        terminalValues = Set.copyOf(terminalValues);
        if (terminalValues.isEmpty()) {
            throw new IllegalArgumentException("process-terminal-values must not be empty");
        }
        if (maxRetention == null || maxRetention.isNegative() || maxRetention.isZero()) {
            throw new IllegalArgumentException("process-max-retention must be positive");
        }
    }

    /**
     * The process a write's response names when it has not ended yet (its body may already report a terminal
     * status): what retention waits for. The body is decoded and parsed once.
     */
    public Optional<String> unfinishedProcess(String contentEncoding, byte[] responseBody) {
        Optional<JsonNode> json = parse(contentEncoding, responseBody);
        Optional<String> id = json.flatMap(this::processId);
        return id.isPresent() && json.flatMap(this::terminalStatus).isPresent() ? Optional.empty() : id;
    }

    /**
     * The unfinished process a write's answer names, when it is a 2xx (what a stored 202 and a lookup's found answer
     * both keep the key bound for); its body decoded by the answer's own {@code Content-Encoding}.
     *
     * @param headers every header of the answer, as received (not only the storable ones)
     */
    public Optional<String> unfinishedProcess(List<ResponseHeader> headers, StoredResponse answer) {
        if (!answer.isSuccessful()) {
            return Optional.empty();
        }
        String encoding = headers.stream().filter(h -> h.named("Content-Encoding")).map(ResponseHeader::value)
                .findFirst().orElse(null);
        return unfinishedProcess(encoding, answer.body());
    }

    /** The status a status response reports, if it reports a terminal one. */
    public Optional<String> terminalStatus(String contentEncoding, byte[] statusBody) {
        return parse(contentEncoding, statusBody).flatMap(this::terminalStatus);
    }

    private Optional<String> processId(JsonNode json) {
        return textAt(json, idPointer).filter(id -> id.matches("[A-Za-z0-9._~-]{1,200}"));
    }

    private Optional<String> terminalStatus(JsonNode json) {
        return textAt(json, statusPointer).filter(terminalValues::contains);
    }

    public String statusPath(String processId) {
        return statusUri.replace(PLACEHOLDER, processId);
    }

    /** The process id in a request path that matches the status URI template. */
    public Optional<String> processIdInPath(String path) {
        Matcher matcher = pathPattern().matcher(path);
        return matcher.matches() ? Optional.of(matcher.group(1)) : Optional.empty();
    }

    private Pattern pathPattern() {
        int at = statusUri.indexOf(PLACEHOLDER);
        return Pattern.compile(Pattern.quote(statusUri.substring(0, at)) + "([^/]+)"
                + Pattern.quote(statusUri.substring(at + PLACEHOLDER.length())));
    }

    private static Optional<JsonNode> parse(String contentEncoding, byte[] body) {
        return EncodedBody.decode(contentEncoding, body).flatMap(json -> {
            if (json == null || json.length == 0) {
                return Optional.empty();
            }
            try {
                return Optional.of(JSON.readTree(json));
            } catch (JacksonException notJson) {
                return Optional.empty();
            }
        });
    }

    private static Optional<String> textAt(JsonNode json, String pointer) {
        try {
            JsonNode node = json.at(pointer);
            return node.isValueNode() && !node.isNull() ? Optional.of(node.asString()) : Optional.empty();
        } catch (IllegalArgumentException badPointer) {
            return Optional.empty();
        }
    }
}
