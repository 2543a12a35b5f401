package dev.retrysafe.gateway.idempotency.fingerprint;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonArray;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonBoolean;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonNull;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonNumber;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonObject;
import dev.retrysafe.gateway.idempotency.fingerprint.JsonValue.JsonString;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.Tuple.Tuple2;
import net.jqwik.api.arbitraries.StringArbitrary;

/**
 * Properties of the canonical form over generated documents: every spelling of the same document (members in any
 * order at any depth, the named unordered arrays in any order, any whitespace and escaping, any notation of the
 * same number) has one canonical form, and any single change of meaning gives another. Numbers are compared by
 * exact decimal value: 1, 1.0 and 1e0 are one number, while two numbers that differ anywhere, even beyond what a
 * double can hold, never share a form. Tries are moderate so that the class runs in a few seconds.
 */
class CanonicalJsonPropertiesTest {
    static final Set<String> UNORDERED = Set.of("sites", "paymentMethods", "integrations");
    static final CanonicalJson CANONICAL = new CanonicalJson(UNORDERED, List.of());

    @Property(tries = 300)
    void membersMayComeInAnyOrderAtAnyDepth(@ForAll("documents") JsonValue document, @ForAll long seed) {
        assertThat(canonical(JsonSpelling.onlyMembersReordered(seed).bytes(document)))
                .isEqualTo(canonical(JsonSpelling.plain(UNORDERED).bytes(document)));
    }

    @Property(tries = 300)
    void theNamedUnorderedArraysMayComeInAnyOrder(@ForAll("documents") JsonValue document, @ForAll long seed) {
        assertThat(canonical(JsonSpelling.onlyUnorderedArraysReordered(seed, UNORDERED).bytes(document)))
                .isEqualTo(canonical(JsonSpelling.plain(UNORDERED).bytes(document)));
    }

    @Property(tries = 300)
    void whitespaceEscapesAndNumberNotationDoNotMatter(@ForAll("documents") JsonValue document, @ForAll long seed) {
        assertThat(canonical(JsonSpelling.onlyTextVaried(seed).bytes(document)))
                .isEqualTo(canonical(JsonSpelling.plain(UNORDERED).bytes(document)));
    }

    @Property(tries = 300)
    void anyTwoSpellingsOfOneDocumentHaveOneCanonicalForm(@ForAll("documents") JsonValue document,
            @ForAll long seed, @ForAll long otherSeed) {
        assertThat(canonical(JsonSpelling.any(seed, UNORDERED).bytes(document)))
                .isEqualTo(canonical(JsonSpelling.any(otherSeed, UNORDERED).bytes(document)));
    }

    @Property(tries = 300)
    void theCanonicalFormIsItsOwnCanonicalForm(@ForAll("documents") JsonValue document, @ForAll long seed) {
        String once = canonical(JsonSpelling.any(seed, UNORDERED).bytes(document));
        assertThat(canonical(once.getBytes(StandardCharsets.UTF_8))).isEqualTo(once);
    }

    /**
     * A scalar's value or type, an element or member added or removed, a member renamed, two different elements of
     * an ordered array swapped: each changes the canonical form, whatever the spelling of either document.
     */
    @Property(tries = 500)
    void anySingleChangeOfMeaningChangesTheCanonicalForm(@ForAll("documents") JsonValue document,
            @ForAll long changeSeed, @ForAll long seed, @ForAll long otherSeed) {
        Optional<JsonValue> changed = document.changedOnce(new Random(changeSeed), UNORDERED,
                (one, other) -> !canonical(JsonSpelling.plain(UNORDERED).bytes(one))
                        .equals(canonical(JsonSpelling.plain(UNORDERED).bytes(other))));
        Assume.that(changed.isPresent());
        assertThat(canonical(JsonSpelling.any(seed, UNORDERED).bytes(changed.get())))
                .isNotEqualTo(canonical(JsonSpelling.any(otherSeed, UNORDERED).bytes(document)));
    }

    @Property(tries = 300)
    void swappingTwoDifferentElementsOfAnOrderedArrayChangesTheCanonicalForm(
            @ForAll("scalars") JsonValue first, @ForAll("scalars") JsonValue second) {
        String firstText = canonical(JsonSpelling.plain(UNORDERED).bytes(first));
        Assume.that(!firstText.equals(canonical(JsonSpelling.plain(UNORDERED).bytes(second))));
        JsonValue ordered = new JsonObject(Map.of("contacts", new JsonArray(List.of(first, second))));
        JsonValue swapped = new JsonObject(Map.of("contacts", new JsonArray(List.of(second, first))));
        JsonValue unordered = new JsonObject(Map.of("sites", new JsonArray(List.of(first, second))));
        JsonValue unorderedSwapped = new JsonObject(Map.of("sites",
                new JsonArray(List.of(second, first))));
        assertThat(canonicalPlain(swapped)).isNotEqualTo(canonicalPlain(ordered));
        assertThat(canonicalPlain(unorderedSwapped)).isEqualTo(canonicalPlain(unordered));
    }

    /** The canonical text of a number is its exact value, as BigDecimal's own parser reads any of its spellings. */
    @Property(tries = 1000)
    void everyNotationOfANumberCanonicalisesToItsExactValue(@ForAll("decimals") BigDecimal value, @ForAll long seed) {
        String spelled = JsonSpelling.any(seed, Set.of()).number(value);
        String expected = new BigDecimal(spelled).compareTo(BigDecimal.ZERO) == 0 ? "0"
                : new BigDecimal(spelled).stripTrailingZeros().toString();
        assertThat(canonical(spelled.getBytes(StandardCharsets.US_ASCII))).as(spelled).isEqualTo(expected);
        assertThat(new BigDecimal(spelled)).isEqualByComparingTo(value);
    }

    /** Numbers one unit apart in their last digit, however far beyond a double's precision, never collide. */
    @Property(tries = 1000)
    void numbersThatDifferAnywhereNeverShareACanonicalForm(@ForAll("neighbouringDecimals") Tuple2<BigDecimal, BigDecimal> pair,
            @ForAll long seed, @ForAll long otherSeed) {
        Assume.that(pair.get1().compareTo(pair.get2()) != 0);
        String one = JsonSpelling.any(seed, Set.of()).number(pair.get1());
        String other = JsonSpelling.any(otherSeed, Set.of()).number(pair.get2());
        assertThat(canonical(one.getBytes(StandardCharsets.US_ASCII)))
                .as(one + " vs " + other)
                .isNotEqualTo(canonical(other.getBytes(StandardCharsets.US_ASCII)));
    }

    @Property(tries = 300)
    void arbitraryBytesAreCanonicalisedOrRefusedButNeverThrow(@ForAll("documents") JsonValue document,
            @ForAll long seed) {
        byte[] bytes = JsonSpelling.any(seed, UNORDERED).bytes(document);
        Random random = new Random(seed);
        for (int flips = 1 + random.nextInt(3); flips > 0 && bytes.length > 0; flips--) {
            bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
        }
        Optional<byte[]> result = CANONICAL.canonicalize(bytes);
        // Whatever it accepts, it accepts again in its canonical form, unchanged.
        result.ifPresent(form -> assertThat(CANONICAL.canonicalize(form)).hasValueSatisfying(
                again -> assertThat(Arrays.equals(again, form)).isTrue()));
    }

    @Provide
    Arbitrary<JsonValue> documents() {
        return value(3);
    }

    @Provide
    Arbitrary<JsonValue> scalars() {
        return Arbitraries.oneOf(
                strings().map(JsonString::new),
                decimals().map(JsonNumber::new),
                Arbitraries.of(true, false).map(JsonBoolean::new),
                Arbitraries.just(new JsonNull()));
    }

    @Provide
    Arbitrary<BigDecimal> decimals() {
        Arbitrary<BigInteger> unscaled = Arbitraries.oneOf(
                Arbitraries.bigIntegers().between(BigInteger.valueOf(-1000), BigInteger.valueOf(1000)),
                Arbitraries.bigIntegers().between(BigInteger.TEN.pow(40).negate(), BigInteger.TEN.pow(40)));
        return Combinators.combine(unscaled, Arbitraries.integers().between(-20, 40)).as(BigDecimal::new);
    }

    /** A number and one that differs from it by one unit in some digit at or after its last one. */
    @Provide
    Arbitrary<Tuple2<BigDecimal, BigDecimal>> neighbouringDecimals() {
        return Combinators.combine(decimals(), Arbitraries.integers().between(0, 30), Arbitraries.of(1, -1))
                .as((value, further, sign) -> Tuple.of(value, value.add(BigDecimal.ONE
                        .movePointLeft(value.scale() + further).multiply(BigDecimal.valueOf(sign)))));
    }

    private Arbitrary<JsonValue> value(int depth) {
        if (depth == 0) {
            return scalars();
        }
        Arbitrary<JsonValue> inner = value(depth - 1);
        return Arbitraries.frequencyOf(
                Tuple.of(3, scalars()),
                Tuple.of(1, inner.list().ofMaxSize(4).map(JsonArray::new)),
                Tuple.of(2, Arbitraries.maps(names(), inner).ofMaxSize(4).map(JsonObject::new)));
    }

    /**
     * The unordered names often, so that unordered arrays appear; and names that need escaping. Never a lone
     * surrogate: Jackson refuses one in a name, so such a body is compared byte for byte (CanonicalJsonTest).
     */
    private static Arbitrary<String> names() {
        return Arbitraries.oneOf(Arbitraries.of("sites", "paymentMethods", "integrations", "legalName", "amount"),
                text().ofMaxLength(5), text().ofMaxLength(3).map(name -> name + "\uD83D\uDE00"));
    }

    /** Text for values: anything UTF-16 can hold, lone surrogates included. */
    private static Arbitrary<String> strings() {
        return Arbitraries.oneOf(text().ofMaxLength(8),
                text().withChars('\uD83D', '\uDE00', '\uDFFF').ofMaxLength(8));
    }

    /** ASCII, quotes and backslashes, control characters, accents, a CJK character, a line separator. */
    private static StringArbitrary text() {
        return Arbitraries.strings()
                .withCharRange('a', 'e')
                .withChars('"', '\\', '/', '\u0000', '\b', '\n', '\u001f', '\u007f', '\u00e9', '\u6771', '\u2028');
    }

    private static String canonical(byte[] json) {
        return CANONICAL.canonicalize(json).map(bytes -> new String(bytes, StandardCharsets.UTF_8))
                .orElseThrow(() -> new AssertionError("not canonicalisable: "
                        + new String(json, StandardCharsets.UTF_8)));
    }

    private static String canonicalPlain(JsonValue value) {
        return canonical(JsonSpelling.plain(UNORDERED).bytes(value));
    }
}
