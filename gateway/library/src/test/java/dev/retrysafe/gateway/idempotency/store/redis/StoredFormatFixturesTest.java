package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retrysafe.gateway.idempotency.encryption.EncryptionKeys;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprints;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.CompletionResult;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore.SettleResult;
import dev.retrysafe.gateway.idempotency.store.LookupValues;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.support.Marks;
import dev.retrysafe.gateway.idempotency.support.RedisClient;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.data.redis.connection.DataType;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.ZSetOperations;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Records as this release's scripts write them, checked in under {@code src/test/resources/stored-format/}, and as
 * the release before wrote them (format 1): a fleet half upgraded reads both, so each is loaded into a real Redis and
 * replayed, settled, released and expired by today's code. Every later release keeps these passing, or says in the
 * CHANGELOG why not. {@code -Dstored-format.write=true} writes this release's folder anew from today's scripts (the
 * format-1 files only where missing, from them less the four fields format 2 added); see the folder's README.
 */
class StoredFormatFixturesTest {
    static final Path FIXTURES = Path.of("src/test/resources/stored-format");
    /** The format this release's scripts write ({@code 'format', 2} in idempotency_reserve.lua): the writer's folder. */
    static final String CURRENT = "format-2";
    static final Duration WAIT = Duration.ofSeconds(10);
    static final Set<String> TIME_FIELDS = Set.of("reserved_at", "lease_until", "completed_at", "uncertain_at",
            "resolved_at", "process_ended_at");
    /** What format 2 added: the format-1 fixtures are the format-2 ones without them. */
    static final Set<String> FORMAT_2_FIELDS = Set.of("format", "rules", "strict", "route_id");
    /** A key for the sealed fixture only (32 zero bytes): never a real one. */
    static final EncryptionKeys FIXTURE_KEY = EncryptionKeys.fromBase64(
            Map.of("fixture", Base64.getEncoder().encodeToString(new byte[32])), "fixture");
    static final String OPERATION = "onboarding";
    static final String RULES = "c1;arrays=integrations,paymentMethods,sites;ignore=/sentAt";
    static final Fingerprints FINGERPRINTS = new Fingerprints(new Fingerprint("a1".repeat(32)),
            new Fingerprint("b2".repeat(32)), RULES);
    static final Fingerprints ANOTHER_PAYLOAD = new Fingerprints(new Fingerprint("c3".repeat(32)),
            new Fingerprint("d4".repeat(32)), RULES);
    static final StoredResponse ACCEPTED = new StoredResponse(202,
            List.of(new ResponseHeader("Content-Type", "application/json"), new ResponseHeader("Retry-After", "1")),
            "{\"processId\":\"p-fixture\",\"status\":\"PENDING\"}".getBytes(StandardCharsets.UTF_8), false);
    static final JsonMapper JSON = JsonMapper.builder().build();

    static RedisClient redis;
    static ReactiveRedisTemplate<String, byte[]> bytes;
    RedisIdempotencyStore plain;
    RedisIdempotencyStore sealed;
    RedisRecordInspector operator;

    @BeforeAll
    static void startRedis() {
        redis = RedisClient.start();
        bytes = redis.bytes();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @BeforeEach
    void emptyRedis() {
        redis.flush();
        RedisWakeUps wakeUps = RedisWakeUps.on(redis.connections(), new SettleSignals());
        plain = RedisStoreBuilder.on(redis.store(), wakeUps).build();
        sealed = RedisStoreBuilder.on(redis.store(), wakeUps).sealedWith(FIXTURE_KEY).build();
        operator = new RedisRecordInspector(redis::store, bytes, wakeUps, EncryptionKeys.none(), false,
                RedisIdempotencyStore.RELEASED_OWNERS_TTL);
    }

    /** One stored state: how this release's store is driven into it. */
    enum Fixture {
        IN_FLIGHT, COMPLETED, COMPLETED_PROCESS_PENDING, UNCERTAIN, RELEASED_OWNER_FENCE, OPERATOR_TOMBSTONE,
        COMPLETED_ENCRYPTED;

        IdempotencyScope scope() {
            return new IdempotencyScope("header:acme", OPERATION, "onboarding-v2",
                    new IdempotencyKey("fixture-" + name().toLowerCase().replace('_', '-') + "-0001"));
        }

        OwnerToken owner() {
            return new OwnerToken(String.format("%032x", ordinal() + 1));
        }

        String file() {
            return name().toLowerCase().replace('_', '-') + ".json";
        }
    }

    static Stream<Object[]> fixtures() {
        return Stream.of("format-2", "format-1").flatMap(format -> Stream.of(Fixture.values())
                .map(fixture -> new Object[] {format, fixture}));
    }

    @Test
    void writeTheFixturesAnewWhenAsked() throws IOException {
        assumeTrue(Boolean.getBoolean("stored-format.write"), "-Dstored-format.write=true writes the fixtures");
        for (Fixture fixture : Fixture.values()) {
            redis.flush();
            drive(fixture);
            ObjectNode dump = dump(fixture);
            write(FIXTURES.resolve(CURRENT).resolve(fixture.file()), dump);
            Path former = FIXTURES.resolve("format-1").resolve(fixture.file());
            if (!Files.exists(former)) {
                // Derived once, when format 2 came: it only added fields. An earlier format's files are never rewritten.
                write(former, withoutFormat2Fields(dump));
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("fixtures")
    void eachStoredStateLoadsAndTodaysCodeReplaysSettlesReleasesAndExpiresIt(String format, Fixture fixture)
            throws IOException {
        JsonNode dump = JSON.readTree(Files.readString(FIXTURES.resolve(format).resolve(fixture.file())));
        assertThat(dump.path("state").asString()).isEqualTo(fixture.name());
        load(dump);
        IdempotencyScope scope = fixture.scope();
        Fingerprints asked = format.equals("format-1")
                // A format-1 record has no rules: compared by fingerprint only, whatever the caller's rules.
                ? new Fingerprints(FINGERPRINTS.fingerprint(), new Fingerprint("e5".repeat(32)), "c1")
                : FINGERPRINTS;
        switch (fixture) {
            case IN_FLIGHT -> {
                assertThat(taken(plain.reserve(request(scope, asked, OwnerToken.random()))).state())
                        .isEqualTo(RecordState.IN_FLIGHT);
                assertThat(plain.complete(completion(scope, fixture.owner(), ACCEPTED, Optional.empty())).block(WAIT))
                        .as("its owner settles it").isEqualTo(CompletionResult.STORED);
                assertReplays(plain, scope, asked);
            }
            case COMPLETED -> {
                assertReplays(plain, scope, asked);
                assertThat(taken(plain.reserve(request(scope, ANOTHER_PAYLOAD, OwnerToken.random()))).response())
                        .as("another payload: a mismatch, never the response").isEmpty();
                if (format.equals("format-1")) {
                    Fingerprints strictOnly = new Fingerprints(new Fingerprint("f6".repeat(32)),
                            FINGERPRINTS.fingerprint(), "c1;ignore=/other");
                    assertThat(taken(plain.reserve(request(scope, strictOnly, OwnerToken.random()))).response())
                            .as("no strict fingerprint is known of a format-1 record").isEmpty();
                }
                assertThat(operator.release(scope.hash()).block(WAIT))
                        .as("an operator release never frees a completed record").isEqualTo("COMPLETED");
                assertReplays(plain, scope, asked);
            }
            case COMPLETED_PROCESS_PENDING -> {
                assertThat(taken(plain.reserve(request(scope, asked, OwnerToken.random()))).processEnded()).isFalse();
                assertThat(plain.processEnded(OPERATION, "p-fixture", "COMPLETED", Duration.ofHours(24)).block(WAIT))
                        .as("found through its process link").isTrue();
                IdempotencyRecord ended = assertReplays(plain, scope, asked);
                assertThat(ended.processEnded()).isTrue();
            }
            case UNCERTAIN -> {
                assertThat(taken(plain.reserve(request(scope, asked, OwnerToken.random()))).state())
                        .isEqualTo(RecordState.UNCERTAIN);
                assertThat(operator.complete(scope.hash(), ACCEPTED, Duration.ofHours(24), "fixture", "checked")
                        .block(WAIT)).isEqualTo("UNCERTAIN");
                assertReplays(plain, scope, asked);
            }
            case RELEASED_OWNER_FENCE -> {
                assertThat(plain.reserve(request(scope, asked, fixture.owner())).block(WAIT))
                        .as("its own late reserve").isInstanceOf(Reservation.Fenced.class);
                assertFree(scope);
            }
            case OPERATOR_TOMBSTONE -> {
                assertThat(plain.complete(completion(scope, fixture.owner(), ACCEPTED, Optional.empty())).block(WAIT))
                        .as("its owner's late result, refused").isEqualTo(CompletionResult.FENCED);
                assertFree(scope);
            }
            case COMPLETED_ENCRYPTED -> {
                assertReplays(sealed, scope, asked);
                assertThatThrownBy(() -> plain.reserve(request(scope, asked, OwnerToken.random())).block(WAIT))
                        .as("without its key it cannot be opened").isInstanceOf(RuntimeException.class);
            }
        }
        assertExpires(scope);
    }

    /** The key's record goes by itself: its TTL was loaded, and cut short here to see it go. */
    private static void assertExpires(IdempotencyScope scope) {
        String record = RedisKeyspace.recordKey(scope);
        if (!Boolean.TRUE.equals(bytes.hasKey(record).block(WAIT))) {
            return;
        }
        Duration ttl = bytes.getExpire(record).block(WAIT);
        assertThat(ttl).as("every record expires").isPositive();
        bytes.expire(record, Duration.ofMillis(50)).block(WAIT);
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (Boolean.TRUE.equals(bytes.hasKey(record).block(WAIT)) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(bytes.hasKey(record).block(WAIT)).isFalse();
    }

    private static IdempotencyRecord assertReplays(RedisIdempotencyStore store, IdempotencyScope scope,
            Fingerprints asked) {
        IdempotencyRecord record = taken(store.reserve(request(scope, asked, OwnerToken.random())));
        assertThat(record.state()).isEqualTo(RecordState.COMPLETED);
        assertThat(record.response()).as("the stored response, decoded").contains(ACCEPTED);
        return record;
    }

    private void assertFree(IdempotencyScope scope) {
        OwnerToken next = OwnerToken.random();
        assertThat(plain.reserve(request(scope, ANOTHER_PAYLOAD, next)).block(WAIT))
                .isEqualTo(new Reservation.Reserved(next));
    }

    /** Drives this release's store (and operator) into the fixture's state. */
    private void drive(Fixture fixture) {
        IdempotencyScope scope = fixture.scope();
        OwnerToken owner = fixture.owner();
        RedisIdempotencyStore store = fixture == Fixture.COMPLETED_ENCRYPTED ? sealed : plain;
        assertThat(store.reserve(request(scope, FINGERPRINTS, owner)).block(WAIT)).isInstanceOf(Reservation.Reserved.class);
        switch (fixture) {
            case IN_FLIGHT -> {
            }
            case COMPLETED, COMPLETED_ENCRYPTED -> store.complete(completion(scope, owner, ACCEPTED, Optional.empty()))
                    .block(WAIT);
            case COMPLETED_PROCESS_PENDING -> store.complete(completion(scope, owner, ACCEPTED,
                    Optional.of("p-fixture"))).block(WAIT);
            case UNCERTAIN -> assertThat(store.markUncertain(Marks.uncertain(scope, owner, "response timeout", Duration.ofHours(24)))
                    .block(WAIT)).isEqualTo(SettleResult.DONE);
            case RELEASED_OWNER_FENCE -> assertThat(store.release(scope, owner).block(WAIT))
                    .isEqualTo(SettleResult.DONE);
            case OPERATOR_TOMBSTONE -> assertThat(operator.release(scope.hash()).block(WAIT)).isEqualTo("IN_FLIGHT");
        }
    }

    private static ReservationRequest request(IdempotencyScope scope, Fingerprints fingerprints, OwnerToken owner) {
        return new ReservationRequest(scope, fingerprints, owner, Duration.ofMinutes(1), Duration.ofHours(25),
                "http://backend:8081", false, false, "POST", "/merchants",
                Optional.of(new LookupValues(Map.of("key", "fixture"), Duration.ofMinutes(2))));
    }

    private static Completion completion(IdempotencyScope scope, OwnerToken owner, StoredResponse response,
            Optional<String> processId) {
        return new Completion(scope, owner, FINGERPRINTS, "http://backend:8081", response, Duration.ofHours(24),
                processId);
    }

    private static IdempotencyRecord taken(reactor.core.publisher.Mono<Reservation> reservation) {
        Reservation answer = reservation.block(WAIT);
        assertThat(answer).isInstanceOf(Reservation.Taken.class);
        return ((Reservation.Taken) answer).existing();
    }

    /** Every key Redis holds (it holds only this fixture's), times as offsets from the dump's moment. */
    private static ObjectNode dump(Fixture fixture) {
        long now = redis.nowMillis();
        ObjectNode dump = JSON.createObjectNode();
        dump.put("state", fixture.name());
        dump.put("note", "Written by StoredFormatFixturesTest from this release's scripts; times are ms relative to "
                + "the dump (rebased on load), values UTF-8 text or base64.");
        List<String> names = new ArrayList<>(bytes.keys("*").collectList().block(WAIT));
        names.sort(String::compareTo);
        for (String name : names) {
            ObjectNode key = dump.withObject("/keys").putObject(name);
            DataType type = bytes.type(name).block(WAIT);
            key.put("type", type.code());
            Duration ttl = bytes.getExpire(name).block(WAIT);
            if (ttl != null && !ttl.isNegative() && !ttl.isZero()) {
                key.put("ttlMs", ttl.toMillis());
            }
            switch (type) {
                case HASH -> {
                    Map<String, byte[]> fields = new TreeMap<>(bytes.<String, byte[]>opsForHash().entries(name)
                            .collectMap(Map.Entry::getKey, Map.Entry::getValue).block(WAIT));
                    ObjectNode out = key.putObject("fields");
                    fields.forEach((field, value) -> out.set(field, TIME_FIELDS.contains(field)
                            ? relative(Long.parseLong(text(value).orElseThrow()) - now) : value(value)));
                }
                case ZSET -> {
                    ObjectNode out = key.putObject("members");
                    for (ZSetOperations.TypedTuple<byte[]> member : bytes.opsForZSet()
                            .rangeWithScores(name, org.springframework.data.domain.Range.closed(0L, -1L))
                            .collectList().block(WAIT)) {
                        out.set(text(member.getValue()).orElseThrow(), relative(member.getScore().longValue() - now));
                    }
                }
                case STRING -> key.set("value", value(bytes.opsForValue().get(name).block(WAIT)));
                default -> throw new IllegalStateException("A key of an unexpected type: " + name + " " + type);
            }
        }
        return dump;
    }

    private static ObjectNode withoutFormat2Fields(ObjectNode dump) {
        ObjectNode former = dump.deepCopy();
        former.put("note", "As the release before (stored format 1) wrote it: the format-2 dump less the fields "
                + "format 2 added (format, rules, strict, route_id), which is all that its scripts wrote otherwise.");
        former.path("keys").forEach(key -> {
            if (key.path("fields") instanceof ObjectNode fields) {
                FORMAT_2_FIELDS.forEach(fields::remove);
            }
        });
        return former;
    }

    /** Writes the keys into Redis, times rebased onto its clock now. */
    private static void load(JsonNode dump) {
        long now = redis.nowMillis();
        for (Map.Entry<String, JsonNode> key : dump.path("keys").properties()) {
            String name = key.getKey();
            JsonNode spec = key.getValue();
            switch (spec.path("type").asString()) {
                case "hash" -> {
                    Map<String, byte[]> fields = new LinkedHashMap<>();
                    spec.path("fields").properties().forEach(field -> fields.put(field.getKey(),
                            bytesOf(field.getValue(), now)));
                    bytes.<String, byte[]>opsForHash().putAll(name, fields).block(WAIT);
                }
                case "zset" -> spec.path("members").properties().forEach(member -> bytes.opsForZSet()
                        .add(name, member.getKey().getBytes(StandardCharsets.UTF_8),
                                now + member.getValue().path("relativeMs").asLong()).block(WAIT));
                case "string" -> bytes.opsForValue().set(name, bytesOf(spec.path("value"), now)).block(WAIT);
                default -> throw new IllegalStateException("A fixture key of an unknown type: " + name);
            }
            if (spec.has("ttlMs")) {
                bytes.expire(name, Duration.ofMillis(spec.path("ttlMs").asLong())).block(WAIT);
            }
        }
    }

    private static byte[] bytesOf(JsonNode value, long now) {
        if (value.has("relativeMs")) {
            return Long.toString(now + value.path("relativeMs").asLong()).getBytes(StandardCharsets.UTF_8);
        }
        return value.has("base64") ? Base64.getDecoder().decode(value.path("base64").asString())
                : value.path("text").asString().getBytes(StandardCharsets.UTF_8);
    }

    private static ObjectNode relative(long ms) {
        return JSON.createObjectNode().put("relativeMs", ms);
    }

    private static ObjectNode value(byte[] raw) {
        Optional<String> text = text(raw).filter(t -> t.chars().allMatch(c -> c >= 0x20 && c != 0x7f));
        return text.isPresent() ? JSON.createObjectNode().put("text", text.get())
                : JSON.createObjectNode().put("base64", Base64.getEncoder().encodeToString(raw));
    }

    private static Optional<String> text(byte[] raw) {
        try {
            return Optional.of(StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(java.nio.ByteBuffer.wrap(raw)).toString());
        } catch (CharacterCodingException notText) {
            return Optional.empty();
        }
    }

    private static void write(Path file, JsonNode dump) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(dump) + "\n");
    }
}
