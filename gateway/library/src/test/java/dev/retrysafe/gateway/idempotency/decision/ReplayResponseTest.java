package dev.retrysafe.gateway.idempotency.decision;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ReplayResponseTest {

    private static final byte[] BODY = "{\"merchantId\":\"m-1\"}".getBytes(StandardCharsets.UTF_8);
    private static final ResponseHeader REPLAYED = new ResponseHeader("Idempotency-Replayed", "true");

    private static StoredResponse stored(int status, ResponseHeader... headers) {
        return new StoredResponse(status, List.of(headers), BODY, false);
    }

    @Test
    void anAcceptedOriginalIsReplayedWithTheReplayStatus() {
        ReplayResponse replay = ReplayResponse.of(stored(202), 200);

        assertThat(replay.status()).isEqualTo(200);
    }

    @Test
    void aConfiguredReplayStatusIsHonouredForA2xxOriginal() {
        assertThat(ReplayResponse.of(stored(202), 201).status()).isEqualTo(201);
        assertThat(ReplayResponse.of(stored(200), 201).status()).isEqualTo(201);
    }

    @ParameterizedTest
    @ValueSource(strings = {"Location", "location", "LOCATION"})
    void aSuccessfulReplayDropsLocationWhateverItsCase(String name) {
        ReplayResponse replay = ReplayResponse.of(
                stored(202, new ResponseHeader("Content-Type", "application/json"), new ResponseHeader(name, "/m/1")), 200);

        assertThat(replay.headers()).extracting(ResponseHeader::name).doesNotContain(name);
        assertThat(replay.headers()).noneMatch(h -> h.named("Location"));
        assertThat(replay.headers()).containsExactly(new ResponseHeader("Content-Type", "application/json"), REPLAYED);
    }

    @Test
    void otherHeadersAreKeptInOrderWithRepeatedNamesAndTheReplayMarkerLast() {
        StoredResponse original = stored(202,
                new ResponseHeader("Content-Type", "application/json"),
                new ResponseHeader("Location", "/merchants/m-1"),
                new ResponseHeader("X-Trace", "one"),
                new ResponseHeader("Retry-After", "5"),
                new ResponseHeader("X-Trace", "two"),
                new ResponseHeader("Link", "</a>; rel=next"));

        ReplayResponse replay = ReplayResponse.of(original, 200);

        assertThat(replay.headers()).containsExactly(
                new ResponseHeader("Content-Type", "application/json"),
                new ResponseHeader("X-Trace", "one"),
                new ResponseHeader("Retry-After", "5"),
                new ResponseHeader("X-Trace", "two"),
                new ResponseHeader("Link", "</a>; rel=next"),
                REPLAYED);
    }

    @Test
    void everyReplayIsMarkedExactlyOnceEvenIfTheStoredHeadersAlreadyCarriedTheMarker() {
        StoredResponse original = stored(202,
                new ResponseHeader("idempotency-replayed", "false"),
                new ResponseHeader("X-Other", "kept"),
                new ResponseHeader("Idempotency-Replayed", "true"));

        ReplayResponse replay = ReplayResponse.of(original, 200);

        assertThat(replay.headers()).filteredOn(h -> h.named("Idempotency-Replayed")).containsExactly(REPLAYED);
        assertThat(replay.headers()).containsExactly(new ResponseHeader("X-Other", "kept"), REPLAYED);
    }

    @Test
    void aReplayWithNoStoredHeadersStillCarriesTheMarker() {
        assertThat(ReplayResponse.of(stored(200), 200).headers()).containsExactly(REPLAYED);
    }

    @Test
    void theBodyIsReplayedUnchanged() {
        ReplayResponse replay = ReplayResponse.of(stored(202, new ResponseHeader("Location", "/x")), 200);

        assertThat(replay.body()).isEqualTo(BODY);
        assertThat(new String(replay.body(), StandardCharsets.UTF_8)).isEqualTo("{\"merchantId\":\"m-1\"}");
    }

    @ParameterizedTest
    @ValueSource(ints = {400, 404, 409, 422, 500, 502})
    void aFailedOriginalKeepsItsStatusAndItsLocation(int status) {
        StoredResponse original = stored(status,
                new ResponseHeader("Location", "/errors/1"),
                new ResponseHeader("Content-Type", "application/json"));

        ReplayResponse replay = ReplayResponse.of(original, 200);

        assertThat(replay.status()).isEqualTo(status);
        assertThat(replay.headers()).containsExactly(
                new ResponseHeader("Location", "/errors/1"),
                new ResponseHeader("Content-Type", "application/json"),
                REPLAYED);
        assertThat(replay.body()).isEqualTo(BODY);
    }

    @Test
    void aRedirectOriginalIsNotASuccessSoItKeepsStatusAndLocation() {
        ReplayResponse replay = ReplayResponse.of(stored(303, new ResponseHeader("Location", "/m/1")), 200);

        assertThat(replay.status()).isEqualTo(303);
        assertThat(replay.headers()).contains(new ResponseHeader("Location", "/m/1"));
    }

    @Test
    void theReplayedHeaderListCannotBeModified() {
        ReplayResponse replay = ReplayResponse.of(stored(200), 200);

        assertThat(replay.headers()).isUnmodifiable();
    }

    @Test
    void anOrdinaryReplayIsWritable() {
        assertThat(ReplayResponse.of(stored(202, new ResponseHeader("Content-Type", "application/json")), 200)
                .unwritable()).isEmpty();
    }

    @Test
    void aStoredHeaderHttpCannotCarryMakesTheReplayUnwritableWithoutShowingItsValue() {
        ReplayResponse replay = ReplayResponse.of(
                stored(202, new ResponseHeader("Content-Type", "text/plain\r\nX-Forged: secret")), 200);

        assertThat(replay.unwritable()).hasValueSatisfying(why -> assertThat(why)
                .contains("Content-Type").doesNotContain("secret", "\r", "\n"));
        assertThat(replay.originalStatus()).isEqualTo(202);
        assertThat(ReplayResponse.of(stored(500, new ResponseHeader("Bad Name", "v")), 200).unwritable())
                .hasValue("one of its header names is not an HTTP token");
    }

    @Test
    void aHeaderTheReplayDropsCannotMakeItUnwritable() {
        assertThat(ReplayResponse.of(stored(202, new ResponseHeader("Location", "/m/1\r\n")), 200).unwritable())
                .isEmpty();
    }

    @Test
    void anInformationalStatusIsNoFinalAnswer() {
        assertThat(ReplayResponse.of(stored(101), 200).unwritable()).isPresent();
    }
}
