package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import brave.sampler.Sampler;
import dev.retrysafe.gateway.idempotency.observability.TracedObservations;
import dev.retrysafe.gateway.idempotency.support.RedisProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.tracing.LettuceObservationContext;
import io.lettuce.core.tracing.MicrometerTracing;
import io.lettuce.core.tracing.Tracing;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.ObservationView;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import io.micrometer.tracing.brave.bridge.BraveBaggageManager;
import io.micrometer.tracing.brave.bridge.BraveCurrentTraceContext;
import io.micrometer.tracing.brave.bridge.BraveTracer;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.publisher.Mono;

/**
 * A Redis command gets an observation of its own only in a sampled trace ({@link SampledCommandTracing}), next to
 * Lettuce's own Micrometer tracing, which observes every command. Real Brave tracer deciding the sampling, real
 * Lettuce client, real redis-server; the observations counted are those Lettuce starts for its commands.
 */
class SampledCommandTracingTest {
    static final Duration WAIT = Duration.ofSeconds(10);
    static final byte[] KEY = "sampled-command-tracing".getBytes(StandardCharsets.UTF_8);
    static RedisProcess redis;

    final AtomicBoolean sampleNext = new AtomicBoolean();
    final brave.Tracing tracing = brave.Tracing.newBuilder().sampler(new Sampler() {
        @Override
        public boolean isSampled(long traceId) {
            return sampleNext.get();
        }
    }).build();
    final ObservationRegistry registry = ObservationRegistry.create();
    final List<ObservationView> commandParents = new CopyOnWriteArrayList<>();
    final List<Observation.Context> commands = new CopyOnWriteArrayList<>();
    ClientResources resources;
    RedisClient client;

    @BeforeAll
    static void startRedis() {
        redis = RedisProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    SampledCommandTracingTest() {
        BraveTracer tracer = new BraveTracer(tracing.tracer(), new BraveCurrentTraceContext(tracing.currentTraceContext()),
                new BraveBaggageManager());
        registry.observationConfig().observationHandler(new DefaultTracingObservationHandler(tracer));
        registry.observationConfig().observationHandler(new ObservationHandler<>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return context instanceof LettuceObservationContext;
            }

            @Override
            public void onStart(Observation.Context context) {
                commands.add(context);
                if (context.getParentObservation() != null) {
                    commandParents.add(context.getParentObservation());
                }
            }
        });
    }

    @AfterEach
    void close() {
        if (client != null) {
            client.shutdown();
            resources.shutdown();
        }
        tracing.close();
    }

    @Test
    void aCommandOfASampledRequestIsObservedAsAChildOfTheRequest() {
        StatefulRedisConnection<byte[], byte[]> connection = connect(this::sampledOnly);
        Observation request = request(true);

        get(connection, request);

        assertThat(commands).hasSize(1);
        assertThat(commandParents).containsExactly(request);
    }

    @Test
    void aCommandOfARequestThatIsNotSampledIsNotObserved() {
        StatefulRedisConnection<byte[], byte[]> connection = connect(this::sampledOnly);

        get(connection, request(false));
        get(connection, request(false));

        assertThat(commands).isEmpty();
    }

    @Test
    void aCommandOutsideAnyRequestIsNotObserved() {
        StatefulRedisConnection<byte[], byte[]> connection = connect(this::sampledOnly);

        connection.reactive().get(KEY).block(WAIT);
        connection.sync().get(KEY);

        assertThat(commands).isEmpty();
    }

    @Test
    void aSampledRequestsCommandsStayObservedWhateverCameBefore() {
        StatefulRedisConnection<byte[], byte[]> connection = connect(this::sampledOnly);
        get(connection, request(false));
        Observation sampled = request(true);

        get(connection, sampled);
        get(connection, request(false));

        assertThat(commandParents).containsExactly(sampled);
    }

    /** The store's own connection hands its caller's context on to Lettuce, also when it coalesces its writes. */
    @Test
    void aStoreCallOfASampledRequestIsObservedAsAChildOfTheRequest() {
        ClientResources traced = ClientResources.builder()
                .tracing(sampledOnly(new MicrometerTracing(registry, "Redis")))
                .build();
        LettuceConnectionFactory factory = redis.connect(LettuceClientConfiguration.builder()
                .clientResources(traced).build());
        Observation sampled = request(true);
        try {
            StoreConnection connection = StoreConnection.open(factory, true);

            Mono.defer(() -> connection.get("sampled-command-tracing"))
                    .contextWrite(context -> context.put(ObservationThreadLocalAccessor.KEY, sampled))
                    .block(WAIT);
            sampled.stop();
            connection.close();
        } finally {
            factory.destroy();
            traced.shutdown();
        }

        assertThat(commandParents).containsExactly(sampled);
    }

    /** What Spring Boot installs by itself: every command observed, the unsampled request's too. */
    @Test
    void lettucesOwnTracingObservesEveryCommand() {
        StatefulRedisConnection<byte[], byte[]> connection = connect(Function.identity());

        get(connection, request(false));
        connection.reactive().get(KEY).block(WAIT);

        // and the connection's handshake (HELLO, CLIENT SETINFO) too
        assertThat(commands).filteredOn(command -> "get".equals(command.getContextualName())).hasSize(2);
    }

    Tracing sampledOnly(Tracing lettuces) {
        return new SampledCommandTracing(registry, lettuces, TracedObservations::sampled);
    }

    StatefulRedisConnection<byte[], byte[]> connect(Function<Tracing, Tracing> tracing) {
        resources = ClientResources.builder()
                .tracing(tracing.apply(new MicrometerTracing(registry, "Redis")))
                .build();
        client = RedisClient.create(resources, RedisURI.create("127.0.0.1", redis.port()));
        return client.connect(ByteArrayCodec.INSTANCE);
    }

    /** A request's observation, started, its trace sampled or not by the tracer. */
    Observation request(boolean sampled) {
        sampleNext.set(sampled);
        return Observation.start("http.server.requests", registry);
    }

    /** A GET inside the request, the request's observation in the Reactor context as WebFlux puts it there. */
    void get(StatefulRedisConnection<byte[], byte[]> connection, Observation request) {
        Mono.defer(() -> connection.reactive().get(KEY))
                .contextWrite(context -> context.put(ObservationThreadLocalAccessor.KEY, request))
                .block(WAIT);
        request.stop();
    }
}
