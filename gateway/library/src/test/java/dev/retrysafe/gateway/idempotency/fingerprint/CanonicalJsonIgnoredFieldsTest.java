package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.pointer.JsonPointer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The values a route's fingerprint-ignore names are left out of the canonical form; nothing else is. */
class CanonicalJsonIgnoredFieldsTest {

    private static Optional<String> canonical(String json, String... ignored) {
        return new CanonicalJson(Set.of("sites"), Arrays.stream(ignored).map(JsonPointer::parse).toList())
                .canonicalize(json.getBytes(StandardCharsets.UTF_8))
                .map(bytes -> new String(bytes, StandardCharsets.UTF_8));
    }

    @Test
    void aTopLevelFieldIsLeftOut() {
        assertThat(canonical("{\"sentAt\":\"2026-01-15T10:00:00Z\",\"amount\":42}", "/sentAt"))
                .contains("{\"amount\":42}");
    }

    @Test
    void aFieldAbsentIsTheSameAsAFieldIgnored() {
        assertThat(canonical("{\"amount\":42}", "/sentAt")).isEqualTo(canonical("{\"amount\":42,\"sentAt\":1}",
                "/sentAt"));
    }

    @Test
    void anObjectOrArrayValueIsLeftOutWhole() {
        assertThat(canonical("{\"meta\":{\"trace\":[1,{\"x\":[2]}]},\"a\":1}", "/meta")).contains("{\"a\":1}");
        assertThat(canonical("{\"attempts\":[1,2,3],\"a\":1}", "/attempts")).contains("{\"a\":1}");
    }

    @Test
    void onlyThePathNamedIsLeftOutNotTheSameNameElsewhere() {
        assertThat(canonical("{\"sentAt\":1,\"order\":{\"sentAt\":2}}", "/sentAt"))
                .contains("{\"order\":{\"sentAt\":2}}");
    }

    @Test
    void aStarOverObjectMembersReachesEveryMember() {
        assertThat(canonical("{\"meta\":{\"a\":{\"requestId\":\"r1\",\"k\":1},\"b\":{\"requestId\":\"r2\"}}}",
                "/meta/*/requestId")).contains("{\"meta\":{\"a\":{\"k\":1},\"b\":{}}}");
    }

    @Test
    void aStarOverArrayElementsReachesEveryElement() {
        assertThat(canonical("{\"items\":[{\"sku\":\"a\",\"sentAt\":1},{\"sku\":\"b\",\"sentAt\":2},3]}",
                "/items/*/sentAt")).contains("{\"items\":[{\"sku\":\"a\"},{\"sku\":\"b\"},3]}");
    }

    @Test
    void anIgnoredElementShortensItsArrayAndIndexesAreThoseSent() {
        assertThat(canonical("{\"xs\":[\"a\",\"b\",\"c\",\"d\"]}", "/xs/1", "/xs/3")).contains("{\"xs\":[\"a\",\"c\"]}");
        assertThat(canonical("[\"volatile\",{\"id\":1}]", "/0")).contains("[{\"id\":1}]");
    }

    @Test
    void escapedNamesAreMatchedDecoded() {
        assertThat(canonical("{\"a/b\":1,\"m~n\":2,\"k\":3}", "/a~1b", "/m~0n")).contains("{\"k\":3}");
    }

    @Test
    void removalHappensBeforeAnUnorderedArrayIsSorted() {
        assertThat(canonical("{\"sites\":[{\"u\":\"b\",\"at\":1},{\"u\":\"a\",\"at\":2}]}", "/sites/*/at"))
                .isEqualTo(canonical("{\"sites\":[{\"u\":\"a\",\"at\":9},{\"u\":\"b\",\"at\":8}]}", "/sites/*/at"))
                .contains("{\"sites\":[{\"u\":\"a\"},{\"u\":\"b\"}]}");
    }

    @Test
    void aPointerThatNamesNothingChangesNothing() {
        String body = "{\"b\":[1,{\"c\":2}],\"a\":\"x\"}";
        assertThat(canonical(body, "/nope", "/b/5", "/a/deeper", "/b/1/c/d")).isEqualTo(canonical(body));
    }

    @Test
    void aBodyThatIsNotJsonIsStillNotCanonicalisable() {
        assertThat(canonical("{\"sentAt\":1,", "/sentAt")).isEmpty();
        assertThat(canonical("{\"sentAt\":1,\"sentAt\":2}", "/sentAt")).as("duplicate names stay ambiguous").isEmpty();
    }
}
