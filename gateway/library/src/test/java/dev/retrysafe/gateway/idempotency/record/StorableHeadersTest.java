package dev.retrysafe.gateway.idempotency.record;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class StorableHeadersTest {

    private final StorableHeaders headers = new StorableHeaders(Set.of("Set-Cookie", "x-internal-token"));

    @ParameterizedTest
    @ValueSource(strings = {"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "TE", "Trailer",
            "Transfer-Encoding", "Upgrade", "Proxy-Connection", "connection", "TRANSFER-ENCODING", "te"})
    void hopByHopHeadersAreNeverStored(String name) {
        assertThat(headers.isStorable(name)).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"Content-Length", "content-length", "CONTENT-LENGTH"})
    void contentLengthIsNotStoredBecauseItIsRecomputed(String name) {
        assertThat(headers.isStorable(name)).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"Set-Cookie", "set-cookie", "SET-COOKIE", "X-Internal-Token", "x-internal-token"})
    void configuredNamesAreNeverStoredWhateverTheirCase(String name) {
        assertThat(headers.isStorable(name)).isFalse();
    }

    @Test
    void configuredNamesMatchWhateverCaseTheyWereConfiguredIn() {
        StorableHeaders lowerConfigured = new StorableHeaders(Set.of("set-cookie"));
        StorableHeaders upperConfigured = new StorableHeaders(Set.of("SET-COOKIE"));

        assertThat(lowerConfigured.isStorable("Set-Cookie")).isFalse();
        assertThat(upperConfigured.isStorable("set-cookie")).isFalse();
    }

    @Test
    void namesThatAreNotConfiguredAreStored() {
        StorableHeaders none = new StorableHeaders(Set.of());

        assertThat(none.isStorable("Set-Cookie")).isTrue();
        assertThat(none.isStorable("Connection")).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"Content-Type", "Location", "Retry-After", "ETag", "X-Request-Id", "Cache-Control",
            "Content-Encoding", "Set-Cookie2", "Connection-Id"})
    void ordinaryHeadersAreStored(String name) {
        assertThat(headers.isStorable(name)).isTrue();
    }

    @Test
    void filterDropsTheUnstorableAndKeepsTheRestInOrderWithRepeatedNames() {
        List<ResponseHeader> upstream = List.of(
                new ResponseHeader("Content-Type", "application/json"),
                new ResponseHeader("Connection", "keep-alive"),
                new ResponseHeader("Link", "</a>"),
                new ResponseHeader("set-cookie", "session=abc"),
                new ResponseHeader("Transfer-Encoding", "chunked"),
                new ResponseHeader("Location", "/merchants/1"),
                new ResponseHeader("Content-Length", "42"),
                new ResponseHeader("Link", "</b>"),
                new ResponseHeader("Keep-Alive", "timeout=5"),
                new ResponseHeader("Set-Cookie", "other=def"),
                new ResponseHeader("Upgrade", "h2c"),
                new ResponseHeader("Trailer", "Expires"),
                new ResponseHeader("TE", "trailers"),
                new ResponseHeader("Proxy-Authenticate", "Basic"),
                new ResponseHeader("Proxy-Authorization", "Basic xyz"),
                new ResponseHeader("Retry-After", "5"));

        assertThat(headers.filter(upstream)).containsExactly(
                new ResponseHeader("Content-Type", "application/json"),
                new ResponseHeader("Link", "</a>"),
                new ResponseHeader("Location", "/merchants/1"),
                new ResponseHeader("Link", "</b>"),
                new ResponseHeader("Retry-After", "5"));
    }

    @Test
    void filteringAnEmptyListGivesAnEmptyList() {
        assertThat(headers.filter(List.of())).isEmpty();
    }

    @Test
    void headersTheUpstreamNamesInItsConnectionHeaderAreNeverStored() {
        List<ResponseHeader> upstream = List.of(
                new ResponseHeader("Connection", "X-Hop-Token, x-debug-route"),
                new ResponseHeader("X-Hop-Token", "t-123"),
                new ResponseHeader("Content-Type", "application/json"),
                new ResponseHeader("X-Debug-Route", "blue"),
                new ResponseHeader("X-Kept", "yes"));

        assertThat(headers.filter(upstream)).containsExactly(
                new ResponseHeader("Content-Type", "application/json"),
                new ResponseHeader("X-Kept", "yes"));
    }

    @Test
    void connectionTokensOnlyConcernTheResponseThatCarriesThem() {
        assertThat(headers.filter(List.of(new ResponseHeader("X-Hop-Token", "t-123"))))
                .containsExactly(new ResponseHeader("X-Hop-Token", "t-123"));
    }
}
