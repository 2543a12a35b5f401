package dev.retrysafe.gateway.idempotency.filter;

import static org.assertj.core.api.Assertions.assertThat;

import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.dialect.Dialects;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpHeaders;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * The OpenAPI description the gateway serves, used as a contract: a real response the gateway produced must
 * match the response component documented for its status, by JSON Schema validation of its body (OpenAPI 3.1
 * dialect), its Retry-After header and its message, which must be one of the documented examples (up to the
 * numbers in it, which follow the configuration).
 */
final class OpenApiContract {
    /** Where the document is said to live, so that its internal references resolve. */
    static final String DOCUMENT_IRI = "https://gateway.test/idempotency/openapi.yaml";
    static final Map<Integer, String> RESPONSE_FOR_STATUS = Map.of(
            400, "RequestMalformed",
            422, "IdempotencyKeyInvalid",
            408, "RequestBodyTimeout",
            409, "IdempotencyConflict",
            413, "RequestBodyTooLarge",
            502, "UpstreamFailed",
            503, "IdempotencyUnavailable",
            504, "UpstreamTimeout");
    /** The same for a route with {@code contract: ietf}. */
    static final Map<Integer, String> IETF_RESPONSE_FOR_STATUS = Map.of(
            400, "IetfBadRequest",
            422, "IetfPayloadMismatch",
            408, "IetfRequestBodyTimeout",
            409, "IetfConflict",
            413, "IetfRequestBodyTooLarge",
            502, "IetfUpstreamFailed",
            503, "IetfUnavailable",
            504, "IetfUpstreamTimeout");
    static final String PROBLEM_JSON = "application/problem+json";

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final JsonNode document;
    private final SchemaRegistry schemas;

    OpenApiContract(String yaml) {
        this.document = YAMLMapper.builder().build().readTree(yaml);
        this.schemas = SchemaRegistry.withDefaultDialect(Dialects.getOpenApi31(),
                builder -> builder.schemas(Map.of(DOCUMENT_IRI, yaml)));
    }

    JsonNode document() {
        return document;
    }

    /** Schema errors of {@code instance} against the schema at a JSON pointer into the document. */
    List<String> errors(String pointer, JsonNode instance) {
        Schema schema = schemas.getSchema(SchemaLocation.of(DOCUMENT_IRI + "#" + pointer));
        List<String> messages = new ArrayList<>();
        for (Error error : schema.validate(instance)) {
            messages.add(error.toString());
        }
        return messages;
    }

    /** The pointer to the JSON body schema of a response component. */
    static String bodySchemaOf(String response) {
        return "/components/responses/" + response + "/content/application~1json/schema";
    }

    /** The pointer to the problem details schema of a response component. */
    static String problemSchemaOf(String response) {
        return "/components/responses/" + response + "/content/application~1problem+json/schema";
    }

    /** The problem examples of a response component. */
    List<JsonNode> problemExamples(String response) {
        List<JsonNode> examples = new ArrayList<>();
        document.at("/components/responses/" + response + "/content/application~1problem+json/examples")
                .forEach(example -> examples.add(example.get("value")));
        return examples;
    }

    /** The messages of a response component's examples. */
    List<String> exampleMessages(String response) {
        List<String> messages = new ArrayList<>();
        document.at("/components/responses/" + response + "/content/application~1json/examples")
                .forEach(example -> messages.add(example.at("/value/status/message").asString()));
        return messages;
    }

    /**
     * Asserts that a response the gateway produced is what its description says: the status has a response
     * component, the body validates against it and carries the status as reason, a message the examples show, and
     * Retry-After is there when documented as always present and documented whenever it is present.
     */
    void assertDescribes(int status, HttpHeaders headers, byte[] body) {
        String response = RESPONSE_FOR_STATUS.get(status);
        assertThat(response).as("a response component for status " + status).isNotNull();
        JsonNode json = JSON.readTree(body);
        assertThat(errors(bodySchemaOf(response), json)).as(response + ": " + json).isEmpty();
        assertThat(json.at("/status/reason").asInt()).isEqualTo(status);
        // Numbers in messages (limits, statuses) follow the configuration: compared up to them.
        assertThat(exampleMessages(response).stream().map(OpenApiContract::withoutNumbers))
                .as(response + " examples").contains(withoutNumbers(json.at("/status/message").asString()));
        assertThat(headers.getContentType()).hasToString("application/json");
        assertRetryAfterDescribed(response, headers);
    }

    /**
     * The same for a route with {@code contract: ietf}: an {@code application/problem+json} body that validates
     * against the Ietf* component for its status, with its status, and a type, title and detail one of its examples
     * shows (the detail up to the numbers in it).
     */
    void assertDescribesProblem(int status, HttpHeaders headers, byte[] body) {
        String response = IETF_RESPONSE_FOR_STATUS.get(status);
        assertThat(response).as("an Ietf response component for status " + status).isNotNull();
        assertThat(headers.getContentType()).hasToString(PROBLEM_JSON);
        JsonNode json = JSON.readTree(body);
        assertThat(errors(problemSchemaOf(response), json)).as(response + ": " + json).isEmpty();
        assertThat(json.get("status").asInt()).isEqualTo(status);
        assertThat(problemExamples(response).stream().map(example -> List.of(example.get("type").asString(),
                        example.get("title").asString(), withoutNumbers(example.get("detail").asString()))))
                .as(response + " examples")
                .contains(List.of(json.get("type").asString(), json.get("title").asString(),
                        withoutNumbers(json.get("detail").asString())));
        assertRetryAfterDescribed(response, headers);
    }

    private void assertRetryAfterDescribed(String response, HttpHeaders headers) {
        JsonNode retryAfter = document.at("/components/responses/" + response + "/headers/Retry-After");
        if (headers.getFirst(HttpHeaders.RETRY_AFTER) != null) {
            assertThat(retryAfter.isMissingNode()).as(response + " documents Retry-After").isFalse();
            assertThat(Integer.parseInt(headers.getFirst(HttpHeaders.RETRY_AFTER))).isPositive();
        }
        if (!retryAfter.isMissingNode() && referenced(retryAfter).path("required").asBoolean(false)) {
            assertThat(headers.getFirst(HttpHeaders.RETRY_AFTER)).as(response + " always has Retry-After").isNotNull();
        }
    }

    private static String withoutNumbers(String message) {
        return message.replaceAll("[0-9]+", "N");
    }

    JsonNode referenced(JsonNode node) {
        String ref = node.path("$ref").asString("");
        return ref.startsWith("#") ? document.at(ref.substring(1)) : node;
    }
}
