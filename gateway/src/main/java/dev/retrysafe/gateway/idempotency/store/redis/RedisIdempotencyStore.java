package dev.retrysafe.gateway.idempotency.store.redis;

import dev.retrysafe.gateway.idempotency.fingerprint.Fingerprint;
import dev.retrysafe.gateway.idempotency.record.IdempotencyRecord;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.SettleSignals;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.ReactiveRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Mono;

/**
 * The store on Redis: one hash per scope, {@code idempotency:{<scope hash>}}, changed only by the Lua scripts under
 * {@code META-INF/scripts}. The braces are a hash tag, so a record stays in one slot of a Redis Cluster. Key names
 * carry only the hash: Redis never sees a raw tenant or key.
 */
public final class RedisIdempotencyStore implements IdempotencyStore {
    public static final String KEY_PREFIX = "idempotency:";
    public static final String SETTLED_CHANNEL = "idempotency:settled";

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> RESERVE = script("idempotency_reserve.lua", List.class);
    private static final RedisScript<Long> COMPLETE = script("idempotency_complete.lua", Long.class);
    private static final RedisScript<Long> RELEASE = script("idempotency_release.lua", Long.class);
    private static final byte[] WAIT = bytes("1");
    private static final byte[] NO_WAIT = bytes("0");
    private static final byte[] CHANNEL = bytes(SETTLED_CHANNEL);

    private final ReactiveRedisTemplate<String, byte[]> redis;
    private final SettleSignals signals;
    private final Clock clock;

    public RedisIdempotencyStore(ReactiveRedisTemplate<String, byte[]> redis, SettleSignals signals, Clock clock) {
        this.redis = redis;
        this.signals = signals;
        this.clock = clock;
    }

    public static String recordKey(IdempotencyScope scope) {
        return KEY_PREFIX + "{" + scope.hash() + "}";
    }

    @Override
    public Mono<Reservation> reserve(IdempotencyScope scope, Fingerprint fingerprint, OwnerToken owner,
            Duration lease, boolean willWait) {
        List<byte[]> args = List.of(bytes(fingerprint.hex()), bytes(owner.value()), millis(lease), now(),
                willWait ? WAIT : NO_WAIT);
        return redis.execute(RESERVE, List.of(recordKey(scope)), args).next()
                .map(reply -> toReservation(reply, owner));
    }

    @Override
    public Mono<Boolean> complete(IdempotencyScope scope, OwnerToken owner, StoredResponse response,
            Duration retention) {
        List<byte[]> args = List.of(bytes(owner.value()), StoredResponseCodec.encode(response), millis(retention),
                now(), CHANNEL, bytes(scope.hash()));
        return settle(scope, redis.execute(COMPLETE, List.of(recordKey(scope)), args).next());
    }

    @Override
    public Mono<Boolean> release(IdempotencyScope scope, OwnerToken owner) {
        List<byte[]> args = List.of(bytes(owner.value()), CHANNEL, bytes(scope.hash()));
        return settle(scope, redis.execute(RELEASE, List.of(recordKey(scope)), args).next());
    }

    @Override
    public SettleWaiter awaitSettle(IdempotencyScope scope) {
        return signals.register(scope.hash());
    }

    private Mono<Boolean> settle(IdempotencyScope scope, Mono<Long> script) {
        // Waiters on this instance need not wait for the pub/sub round trip.
        return script.map(changed -> changed == 1L).doOnNext(changed -> {
            if (changed) {
                signals.signal(scope.hash());
            }
        });
    }

    private static Reservation toReservation(List<?> reply, OwnerToken owner) {
        String state = text(reply.get(0));
        if ("RESERVED".equals(state)) {
            return new Reservation.Reserved(owner);
        }
        Fingerprint fingerprint = new Fingerprint(text(reply.get(1)));
        RecordState recordState = RecordState.valueOf(state);
        Optional<StoredResponse> response = reply.size() > 2
                ? Optional.of(StoredResponseCodec.decode((byte[]) reply.get(2)))
                : Optional.empty();
        return new Reservation.Taken(new IdempotencyRecord(recordState, fingerprint, response));
    }

    private static String text(Object element) {
        return element instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(element);
    }

    private byte[] now() {
        return bytes(Long.toString(clock.millis()));
    }

    private static byte[] millis(Duration duration) {
        return bytes(Long.toString(Math.max(1, duration.toMillis())));
    }

    private static byte[] bytes(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }

    private static <T> RedisScript<T> script(String name, Class<T> type) {
        return RedisScript.of(new ClassPathResource("META-INF/scripts/" + name), type);
    }
}
