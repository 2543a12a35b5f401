package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A fingerprinter that remembers fingerprints by the raw bytes of a request gives exactly what one that does not
 * gives, for every request, and skips the canonical form only for a request it has seen byte for byte. A skipped
 * one is seen as the very fingerprint remembered (the same instance); one put in canonical form again is a new one.
 */
class RememberedFingerprintsTest {

    private static final CanonicalJson CANONICAL =
            new CanonicalJson(Set.of("sites", "paymentMethods", "integrations"), List.of());
    private static final String MERCHANT = "{\"name\":\"Tienda\",\"sites\":[\"b\",\"a\"],\"settings\":{\"currency\":\"COP\"}}";

    @Test
    void aRequestSeenByteForByteSkipsTheCanonicalForm() {
        RequestFingerprinter remembering = new RequestFingerprinter(CANONICAL, 16, List.of());
        Fingerprint first = remembering.fingerprint("POST", "/merchants", null, "application/json", utf8(MERCHANT));
        Fingerprint again = remembering.fingerprint("POST", "/merchants", null, "application/json", utf8(MERCHANT));

        assertThat(again).isSameAs(first);
    }

    @Test
    void anotherSpellingOfTheSameContentIsPutInCanonicalFormAndGetsTheSameFingerprint() {
        RequestFingerprinter remembering = new RequestFingerprinter(CANONICAL, 16, List.of());
        Fingerprint first = remembering.fingerprint("POST", "/merchants", null, "application/json", utf8(MERCHANT));
        Fingerprint reordered = remembering.fingerprint("POST", "/merchants", null, "application/json",
                utf8("{\"settings\":{\"currency\":\"COP\"},\"sites\":[\"a\",\"b\"],\"name\":\"Tienda\"}"));

        assertThat(reordered).isEqualTo(first).isNotSameAs(first);
    }

    @Test
    void theSameBytesOnAnotherMethodPathOrQueryAreNotTakenForTheRequestSeen() {
        RequestFingerprinter remembering = new RequestFingerprinter(CANONICAL, 16, List.of());
        RequestFingerprinter plain = new RequestFingerprinter(CANONICAL, 0, List.of());
        byte[] body = utf8(MERCHANT);
        String[][] requests = {
                {"POST", "/merchants", null}, {"PUT", "/merchants", null}, {"POST", "/merchants/m-1", null},
                {"POST", "/merchants/m-2", null}, {"POST", "/merchants", "dryRun=true"}, {"post", "/merchants", null}};
        Set<Fingerprint> computed = Collections.newSetFromMap(new IdentityHashMap<>());
        for (String[] r : requests) {
            Fingerprint fingerprint = remembering.fingerprint(r[0], r[1], r[2], "application/json", body);
            assertThat(fingerprint).as("%s %s?%s", r[0], r[1], r[2])
                    .isEqualTo(plain.fingerprint(r[0], r[1], r[2], "application/json", body));
            computed.add(fingerprint);
        }
        // "post" and "POST" are one method; every other line was a request of its own.
        assertThat(computed).hasSize(requests.length - 1);
    }

    @Test
    void nonJsonBodiesAreHashedAsTheyAreAndNotRemembered() {
        RequestFingerprinter remembering = new RequestFingerprinter(CANONICAL, 16, List.of());
        Fingerprint first = remembering.fingerprint("POST", "/files", null, "application/octet-stream", utf8(MERCHANT));
        Fingerprint again = remembering.fingerprint("POST", "/files", null, "application/octet-stream", utf8(MERCHANT));

        assertThat(again).isEqualTo(first).isNotSameAs(first);
        assertThat(remembering.rememberedCount()).isZero();
    }

    /**
     * Random requests drawn from a small pool (so that many repeat, byte for byte or in another spelling), through a
     * memory far smaller than the pool so that entries are dropped and found again: every answer equals the plain
     * fingerprinter's, and memory never holds more than its capacity.
     */
    @Test
    void randomRequestsThroughASmallMemoryGetExactlyThePlainFingerprints() {
        long seed = new Random().nextLong();
        System.out.println("RememberedFingerprintsTest seed: " + seed);
        Random random = new Random(seed);
        RequestFingerprinter plain = new RequestFingerprinter(CANONICAL, 0, List.of());
        RequestFingerprinter remembering = new RequestFingerprinter(CANONICAL, 8, List.of());
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            bodies.add("{\"n\":" + i + ",\"sites\":[\"x\",\"y\"]}");
            bodies.add("{\"sites\":[\"y\",\"x\"], \"n\":" + i + ".0}");
        }
        bodies.add("not json");
        bodies.add("");
        String[] methods = {"POST", "PUT", "patch"};
        String[] paths = {"/merchants", "/merchants/m-1"};
        String[] queries = {null, "", "a=1&b=2", "b=2&a=1"};
        String[] types = {"application/json", "application/merchant+json; charset=utf-8", "text/plain", null};
        for (int i = 0; i < 5_000; i++) {
            String method = methods[random.nextInt(methods.length)];
            String path = paths[random.nextInt(paths.length)];
            String query = queries[random.nextInt(queries.length)];
            String type = types[random.nextInt(types.length)];
            byte[] body = utf8(bodies.get(random.nextInt(bodies.size())));
            assertThat(remembering.fingerprint(method, path, query, type, body))
                    .as("seed %d, request %d: %s %s?%s %s %s", seed, i, method, path, query, type, new String(body))
                    .isEqualTo(plain.fingerprint(method, path, query, type, body));
            assertThat(remembering.rememberedCount()).isLessThanOrEqualTo(8);
        }
    }

    @Test
    void aMemoryOfOneIsRefusedAndZeroIsOff() {
        assertThatThrownBy(() -> new RequestFingerprinter(CANONICAL, 1, List.of())).hasMessageContaining("at least 2");
        assertThatThrownBy(() -> new RequestFingerprinter(CANONICAL, -1, List.of()))
                .hasMessageContaining("must not be negative");
        RequestFingerprinter off = new RequestFingerprinter(CANONICAL, 0, List.of());
        Fingerprint first = off.fingerprint("POST", "/merchants", null, "application/json", utf8(MERCHANT));
        assertThat(off.fingerprint("POST", "/merchants", null, "application/json", utf8(MERCHANT)))
                .isEqualTo(first).isNotSameAs(first);
        assertThat(off.rememberedCount()).isZero();
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
