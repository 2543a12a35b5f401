package dev.retrysafe.gateway.idempotency.response;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retrysafe.gateway.idempotency.response.GatewayError.Kind;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The two contracts' statuses, media types and bodies for every kind of answer the gateway produces itself. */
class ErrorContractTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final OffsetDateTime AT = OffsetDateTime.parse("2026-08-17T10:14:03.789-05:00");

    /** The Onboarding statuses every route has answered with so far. */
    static final Map<Kind, Integer> ONBOARDING = statuses(
            Kind.KEY_MISSING, 422, Kind.KEY_INVALID, 422, Kind.TENANT_INVALID, 422,
            Kind.PAYLOAD_MISMATCH, 409, Kind.IN_FLIGHT, 409, Kind.OUTCOME_UNCERTAIN, 409,
            Kind.REPLAY_TOO_LARGE, 409, Kind.REPLAY_UNREADABLE, 409,
            Kind.BODY_TOO_LARGE, 413, Kind.BODY_TIMEOUT, 408, Kind.BODY_MALFORMED, 400, Kind.BODY_INCOMPLETE, 400,
            Kind.STORE_UNAVAILABLE, 503, Kind.UPSTREAM_UNREACHABLE, 502, Kind.UPSTREAM_TIMEOUT, 504,
            Kind.UPSTREAM_BROKEN, 502);

    @Test
    void theOnboardingContractKeepsItsStatuses() {
        for (Kind kind : Kind.values()) {
            assertThat(ErrorContract.ONBOARDING.status(kind)).as(kind.name()).isEqualTo(ONBOARDING.get(kind));
        }
    }

    @Test
    void theIetfContractAnswersAKeyMissingOrInvalid400AReusedKey422AndAnOutstandingRequest409() {
        Map<Kind, Integer> ietf = new EnumMap<>(ONBOARDING);
        ietf.putAll(statuses(Kind.KEY_MISSING, 400, Kind.KEY_INVALID, 400, Kind.TENANT_INVALID, 400,
                Kind.PAYLOAD_MISMATCH, 422));

        for (Kind kind : Kind.values()) {
            assertThat(ErrorContract.IETF.status(kind)).as(kind.name()).isEqualTo(ietf.get(kind));
        }
        assertThat(ErrorContract.IETF.status(Kind.IN_FLIGHT)).isEqualTo(409);
        assertThat(ErrorContract.IETF.status(Kind.OUTCOME_UNCERTAIN)).isEqualTo(409);
    }

    @Test
    void theOnboardingBodyIsTheEnvelope() {
        GatewayError mismatch = GatewayError.payloadMismatch();

        assertThat(ErrorContract.ONBOARDING.mediaType()).isEqualTo("application/json");
        assertThat(ErrorContract.ONBOARDING.body(mismatch, AT))
                .isEqualTo(ErrorEnvelope.json(409, GatewayError.PAYLOAD_MISMATCH_MESSAGE, AT));
    }

    @Test
    void theIetfBodyIsAProblemDetailsDocumentWithExactlyTypeTitleStatusAndDetail() {
        GatewayError mismatch = GatewayError.payloadMismatch();

        assertThat(ErrorContract.IETF.mediaType()).isEqualTo("application/problem+json");
        assertThat(new String(ErrorContract.IETF.body(mismatch, AT), StandardCharsets.UTF_8)).isEqualTo(
                "{\"type\":\"https://retrysafe.dev/problems/idempotency-key-reused\","
                        + "\"title\":\"Idempotency key is already used\",\"status\":422,"
                        + "\"detail\":\"The idempotency key was already used with a different payload.\"}");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void everyKindHasAProblemBodyThatIsValidJsonWithItsStatusAndMessage(Kind kind) {
        GatewayError error = new GatewayError(kind, "Say \"why\" \\ and\nwhat\u0001 to do: Müller.",
                Optional.of(Duration.ofSeconds(1)));

        JsonNode body = JSON.readTree(ErrorContract.IETF.body(error, AT));

        assertThat(body.propertyNames()).containsExactly("type", "title", "status", "detail");
        assertThat(body.get("type").asString()).isEqualTo(ProblemDetails.type(kind))
                .startsWith(ProblemDetails.TYPE_BASE).matches("https://retrysafe\\.dev/problems/[a-z]+(-[a-z]+)*");
        assertThat(body.get("title").asString()).isEqualTo(ProblemDetails.title(kind)).isNotBlank();
        assertThat(body.get("status").isInt()).isTrue();
        assertThat(body.get("status").asInt()).isEqualTo(ErrorContract.IETF.status(kind));
        assertThat(body.get("detail").asString()).isEqualTo(error.message());
    }

    @Test
    void everyKindHasItsOwnProblemTypeAndTitle() {
        Set<String> types = Arrays.stream(Kind.values()).map(ProblemDetails::type).collect(Collectors.toSet());
        Set<String> titles = Arrays.stream(Kind.values()).map(ProblemDetails::title).collect(Collectors.toSet());

        assertThat(types).hasSize(Kind.values().length);
        assertThat(titles).hasSize(Kind.values().length);
    }

    @Test
    void aContractIsNamedAsInARouteArgWithoutRegardToCase() {
        assertThat(ErrorContract.named("onboarding")).isEqualTo(ErrorContract.ONBOARDING);
        assertThat(ErrorContract.named("ietf")).isEqualTo(ErrorContract.IETF);
        assertThat(ErrorContract.named(" IETF ")).isEqualTo(ErrorContract.IETF);
        assertThat(List.of(ErrorContract.values())).extracting(ErrorContract::argValue)
                .containsExactly("onboarding", "ietf");
    }

    @Test
    void anUnknownContractIsRefusedNamingTheAllowedOnes() {
        assertThatThrownBy(() -> ErrorContract.named("rfc9457"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("contract must be one of onboarding, ietf; was 'rfc9457'");
    }

    private static Map<Kind, Integer> statuses(Object... kindsAndStatuses) {
        Map<Kind, Integer> map = new EnumMap<>(Kind.class);
        for (int i = 0; i < kindsAndStatuses.length; i += 2) {
            map.put((Kind) kindsAndStatuses[i], (Integer) kindsAndStatuses[i + 1]);
        }
        return map;
    }
}
