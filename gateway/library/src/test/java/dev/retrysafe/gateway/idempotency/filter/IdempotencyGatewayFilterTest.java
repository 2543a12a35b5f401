package dev.retrysafe.gateway.idempotency.filter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retrysafe.gateway.idempotency.config.IdempotencyProperties;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.observability.RequestReports;
import dev.retrysafe.gateway.idempotency.observability.TraceIds;
import dev.retrysafe.gateway.idempotency.process.ProcessStatusObserver;
import dev.retrysafe.gateway.idempotency.process.ProcessWatcher;
import dev.retrysafe.gateway.idempotency.reconcile.Reconciler;
import dev.retrysafe.gateway.idempotency.response.GatewayError;
import dev.retrysafe.gateway.idempotency.record.RecordState;
import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.idempotency.store.Completion;
import dev.retrysafe.gateway.idempotency.store.IdempotencyStore;
import dev.retrysafe.gateway.idempotency.store.LeaseRenewals;
import dev.retrysafe.gateway.idempotency.store.OwnerToken;
import dev.retrysafe.gateway.idempotency.store.ProcessQueue;
import dev.retrysafe.gateway.idempotency.store.Reservation;
import dev.retrysafe.gateway.idempotency.store.ReservationRequest;
import dev.retrysafe.gateway.idempotency.store.SettleWaiter;
import dev.retrysafe.gateway.idempotency.store.StoreCallNotSent;
import dev.retrysafe.gateway.idempotency.support.ForwardingStore;
import dev.retrysafe.gateway.idempotency.support.InMemoryIdempotencyStore;
import dev.retrysafe.gateway.idempotency.support.MutableClock;
import dev.retrysafe.gateway.idempotency.tenant.PrincipalOrHeaderTenantResolver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.route.Route;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.util.unit.DataSize;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Each branch of the {@code Idempotency} filter, without HTTP and without Redis: the filter is built by its factory
 * as the auto-configuration builds it, over the in-memory store, and driven with mock exchanges; a stub chain plays
 * the upstream. What is asserted is what a client and the store would see: status, headers, body, upstream calls,
 * the record left behind.
 */
class IdempotencyGatewayFilterTest {
    static final String KEY = "order-7f3a9c1e-0b2d";
    static final String BODY = "{\"merchant\":\"acme\",\"amount\":42}";
    static final String ACCEPTED = "{\"processId\":\"p-1\",\"status\":\"PENDING\"}";
    static final Route ROUTE = Route.async().id("r").uri("http://upstream").predicate(e -> true).build();
    static final Duration WAIT = Duration.ofSeconds(5);
    /** What an application that sets no {@code idempotency.*} property gets, bound as Boot binds it. */
    static final IdempotencyProperties PROPERTIES = new Binder(new MapConfigurationPropertySource())
            .bindOrCreate("idempotency", IdempotencyProperties.class);

    final MutableClock clock = new MutableClock(Instant.parse("2026-01-15T10:00:00Z"));
    final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore(clock);
    final Upstream upstream = new Upstream();
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    final IdempotencyEvents events = new IdempotencyEvents(meters);
    final List<LeaseRenewals> leaseRenewals = new CopyOnWriteArrayList<>();
    /** The settle calls of every filter made here: a result's store call may end after its answer. */
    final List<PendingSettles> pendingSettles = new CopyOnWriteArrayList<>();
    final List<ProcessWatcher> watchers = new CopyOnWriteArrayList<>();
    final IdempotencyScope scope = new IdempotencyScope("", "r", new IdempotencyKey(KEY));

    /** Waits until no store call settling an exchange runs (bounded). */
    void awaitSettled() {
        pendingSettles.forEach(settles -> assertThat(settles.awaitNone(WAIT))
                .as("settle calls under way after %s", WAIT).isTrue());
    }

    @AfterEach
    void stopLeaseRenewals() {
        leaseRenewals.forEach(LeaseRenewals::destroy);
        watchers.forEach(ProcessWatcher::destroy);
    }

    // ---- before the store

    @Test
    void aMethodTheRouteDoesNotGuardPassesThroughUntouched() {
        MockServerWebExchange exchange = exchange(MockServerHttpRequest.get("/merchants/42").header("Idempotency-Key",
                KEY));
        filter(new IdempotencyGatewayFilterFactory.Config()).filter(exchange, upstream).block(WAIT);

        assertThat(upstream.calls).hasValue(1);
        assertThat(upstream.exchanges.get(0)).as("not wrapped: nothing captured").isSameAs(exchange);
        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(202));
        assertThat(store.size()).isZero();
    }

    @Test
    void aRequestWithoutKeyIsRefusedWith422AndNotForwarded() {
        MockServerWebExchange exchange = send(post().body(BODY));

        assertEnvelope(exchange, 422, "The Idempotency-Key header is required.");
        assertThat(upstream.calls).hasValue(0);
        assertThat(store.size()).isZero();
    }

    @Test
    void aKeyTooShortIsRefusedWith422AndNotForwarded() {
        MockServerWebExchange exchange = send(post().header("Idempotency-Key", "short-key").body(BODY));

        assertEnvelope(exchange, 422, "The Idempotency-Key header must be at least 16 characters long.");
        assertThat(upstream.calls).hasValue(0);
        assertThat(store.size()).isZero();
    }

    @Test
    void aBodyAnnouncedOverMaxRequestBytesIsRefusedWith413() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setMaxRequestBytes(DataSize.ofBytes(16));
        MockServerWebExchange exchange = send(config, keyed().contentLength(BODY.length()).body(BODY));

        assertEnvelope(exchange, 413, "The request body is larger than the limit of 16 bytes.");
        assertThat(upstream.calls).hasValue(0);
        assertThat(store.size()).isZero();
    }

    @Test
    void aBodyStreamedOverMaxRequestBytesIsRefusedWith413() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setMaxRequestBytes(DataSize.ofBytes(16));
        // No Content-Length: the limit is found while reading.
        MockServerWebExchange exchange = send(config, keyed().body(BODY));

        assertThat(exchange.getRequest().getHeaders().getContentLength()).isEqualTo(-1);
        assertEnvelope(exchange, 413, "The request body is larger than the limit of 16 bytes.");
        assertThat(upstream.calls).hasValue(0);
        assertThat(store.size()).isZero();
    }

    // ---- first write and replay

    @Test
    void aFirstWriteIsForwardedOnceAndItsAnswerStored() {
        MockServerWebExchange exchange = send(keyed().body(BODY));

        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(202));
        assertThat(exchange.getResponse().getHeaders().getFirst(HttpHeaders.LOCATION)).isEqualTo("/merchants/42");
        assertThat(body(exchange)).isEqualTo(ACCEPTED);
        assertThat(upstream.calls).hasValue(1);
        assertThat(upstream.bodies).containsExactly(BODY);

        InMemoryIdempotencyStore.StoredRecord record = store.record(scope).orElseThrow();
        assertThat(record.state()).isEqualTo(RecordState.COMPLETED);
        StoredResponse stored = record.response().orElseThrow();
        assertThat(stored.status()).isEqualTo(202);
        assertThat(stored.headers()).contains(new ResponseHeader("Location", "/merchants/42"));
        assertThat(stored.body()).asString(StandardCharsets.UTF_8).isEqualTo(ACCEPTED);
        assertThat(record.expiresAt()).as("kept for the retention")
                .isEqualTo(clock.millis() + Duration.ofHours(24).toMillis());
    }

    @Test
    void theSameKeyAndBodyAreAnsweredFromTheStore() {
        send(keyed().body(BODY));
        MockServerWebExchange replay = send(keyed().body(BODY));

        assertThat(upstream.calls).as("the upstream saw the request once").hasValue(1);
        assertThat(replay.getResponse().getStatusCode()).as("202 replayed as 200")
                .isEqualTo(HttpStatusCode.valueOf(200));
        assertThat(replay.getResponse().getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(replay.getResponse().getHeaders().containsHeader(HttpHeaders.LOCATION))
                .as("nothing new was created").isFalse();
        assertThat(replay.getResponse().getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_JSON);
        assertThat(body(replay)).isEqualTo(ACCEPTED);
    }

    @Test
    void theSameKeyWithAnotherBodyIsAConflict() {
        send(keyed().body(BODY));
        MockServerWebExchange other = send(keyed().body("{\"merchant\":\"acme\",\"amount\":43}"));

        assertThat(upstream.calls).hasValue(1);
        assertThat(body(other)).isEqualTo("{\"status\":{\"status\":\"FAILED\",\"reason\":409,\"message\":"
                + "\"The idempotency key was already used with a different payload.\",\"date\":\"2026-01-15T10:00:00+00:00\"}}");
        assertThat(other.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(409));
        assertThat(other.getResponse().getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_JSON);
    }

    @Test
    void aResultTooLargeToStoreReachesTheClientButIsNotReplayed() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setMaxStoredResponseBytes(DataSize.ofBytes(8));
        MockServerWebExchange first = send(config, keyed().body(BODY));
        assertThat(body(first)).as("streamed whole to the client").isEqualTo(ACCEPTED);
        assertThat(store.record(scope).orElseThrow().response().orElseThrow().bodyOmitted()).isTrue();

        MockServerWebExchange retry = send(config, keyed().body(BODY));
        assertEnvelope(retry, 409, "The request with this idempotency key was already processed (status 202) but "
                + "its response was larger than 8 bytes and cannot be replayed. Do not resend it with a new key: "
                + "check the resource's state.");
        assertThat(upstream.calls).hasValue(1);
    }

    // ---- the intent: ignored fields, intent headers, keys from the event

    static final String STAMPED = "{\"merchant\":\"acme\",\"amount\":42,\"sentAt\":\"2026-01-15T10:00:00Z\"}";
    static final String RESTAMPED = STAMPED.replace("10:00:00Z", "10:00:07Z");

    @Test
    void aRetryDifferingOnlyInAnIgnoredFieldIsReplayed() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setFingerprintIgnore(List.of("/sentAt"));
        GatewayFilter filter = filter(config);
        through(filter, keyed().body(STAMPED));
        MockServerWebExchange retry = through(filter, keyed().body(RESTAMPED));

        assertThat(retry.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(200));
        assertThat(retry.getResponse().getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(body(retry)).isEqualTo(ACCEPTED);
        assertThat(upstream.calls).hasValue(1);
    }

    @Test
    void theSameFieldNotIgnoredStillMakesTheRetryAConflict() {
        GatewayFilter filter = filter(new IdempotencyGatewayFilterFactory.Config());
        through(filter, keyed().body(STAMPED));
        MockServerWebExchange retry = through(filter, keyed().body(RESTAMPED));

        assertEnvelope(retry, 409, "The idempotency key was already used with a different payload.");
        assertThat(upstream.calls).hasValue(1);
    }

    @Test
    void aStarIgnoresAFieldInEveryElementAndMemberButNotTheRest() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setFingerprintIgnore(List.of("/items/*/attempt", "/meta/*/requestId"));
        GatewayFilter filter = filter(config);
        String body = "{\"items\":[{\"sku\":\"a\",\"attempt\":1},{\"sku\":\"b\",\"attempt\":1}],"
                + "\"meta\":{\"web\":{\"requestId\":\"r-1\"},\"app\":{\"requestId\":\"r-2\"}}}";
        through(filter, keyed().body(body));
        MockServerWebExchange retry = through(filter, keyed().body(body.replace("\"attempt\":1", "\"attempt\":2")
                .replace("r-1", "r-3").replace("r-2", "r-4")));
        MockServerWebExchange changed = through(filter, keyed().body(body.replace("\"b\"", "\"c\"")));

        assertThat(retry.getResponse().getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertEnvelope(changed, 409, "The idempotency key was already used with a different payload.");
        assertThat(upstream.calls).hasValue(1);
    }

    @Test
    void anIntentHeaderThatDiffersIsAConflictEvenWithTheBodyBytesRemembered() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setFingerprintHeaders(List.of("X-Api-Version"));
        GatewayFilter filter = filter(config);
        through(filter, keyed().header("X-Api-Version", "1").body(BODY));
        MockServerWebExchange sameIntent = through(filter, keyed().header("x-api-version", "1").body(BODY));
        MockServerWebExchange otherVersion = through(filter, keyed().header("X-Api-Version", "2").body(BODY));

        assertThat(sameIntent.getResponse().getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertEnvelope(otherVersion, 409, "The idempotency key was already used with a different payload.");
        assertThat(upstream.calls).hasValue(1);
    }

    @Test
    void aHeaderTheRouteDoesNotListIsNotPartOfTheRequest() {
        GatewayFilter filter = filter(new IdempotencyGatewayFilterFactory.Config());
        through(filter, keyed().header("X-Api-Version", "1").body(BODY));
        MockServerWebExchange retry = through(filter, keyed().header("X-Api-Version", "2").body(BODY));

        assertThat(retry.getResponse().getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(upstream.calls).hasValue(1);
    }

    @Test
    void twoDeliveriesOfOneEventWithoutAKeyHeaderReachTheUpstreamOnce() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setKeyFrom("body:/id");
        GatewayFilter filter = filter(config);
        String event = "{\"id\":\"evt_1\",\"type\":\"invoice.paid\"}";
        through(filter, post().body(event));
        MockServerWebExchange redelivery = through(filter, post().body(event));
        MockServerWebExchange another = through(filter, post().body("{\"id\":\"evt_2\",\"type\":\"invoice.paid\"}"));

        assertThat(redelivery.getResponse().getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(another.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(202));
        assertThat(upstream.calls).hasValue(2);
        assertThat(store.size()).isEqualTo(2);
    }

    @Test
    void twoDeliveriesWithOneDeliveryHeaderReachTheUpstreamOnce() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setKeyFrom("header:X-GitHub-Delivery");
        GatewayFilter filter = filter(config);
        String delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
        through(filter, post().header("X-GitHub-Delivery", delivery).body(BODY));
        MockServerWebExchange redelivery = through(filter, post().header("X-GitHub-Delivery", delivery).body(BODY));
        MockServerWebExchange withoutIt = through(filter, keyed().body(BODY));

        assertThat(redelivery.getResponse().getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertEnvelope(withoutIt, 422, "The X-GitHub-Delivery header is required.");
        assertThat(upstream.calls).hasValue(1);
    }

    @Test
    void anEventWithoutItsIdIsRefusedWith422NamingWhereTheKeyWasLookedFor() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setKeyFrom("body:/id");
        String where = "The idempotency key is taken from the request body at /id; ";

        assertEnvelope(send(config, keyed().body("{\"type\":\"ping\"}")), 422, where + "it is missing.");
        assertEnvelope(send(config, post().body("{\"id\":null}")), 422, where + "it is null.");
        assertEnvelope(send(config, post().body("{\"id\":{\"v\":1}}")), 422,
                where + "it must be a string or a number, was an object.");
        assertEnvelope(send(config, post().contentType(MediaType.TEXT_PLAIN).body("evt_1")), 422,
                where + "the body is not valid JSON.");
        assertThat(upstream.calls).hasValue(0);
        assertThat(store.size()).isZero();
    }

    // ---- in flight and uncertain

    @Test
    void aDuplicateOfARequestInFlightIsAConflictWhenTheRouteDoesNotWait() throws Exception {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setInFlightWait(Duration.ZERO);
        GatewayFilter filter = filter(config);
        Sinks.Empty<Void> answer = upstream.holdNextAnswer();
        CompletableFuture<Void> first = filter.filter(exchange(keyed().body(BODY)), upstream).toFuture();
        assertThat(store.record(scope).orElseThrow().state()).isEqualTo(RecordState.IN_FLIGHT);

        MockServerWebExchange duplicate = exchange(keyed().body(BODY));
        filter.filter(duplicate, upstream).block(WAIT);

        assertEnvelope(duplicate, 409, "A request with this idempotency key is still being processed. "
                + "Retry later with the same key and payload.");
        assertThat(duplicate.getResponse().getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        assertThat(upstream.calls).hasValue(1);

        answer.tryEmitEmpty();
        first.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(store.record(scope).orElseThrow().state()).isEqualTo(RecordState.COMPLETED);
    }

    @Test
    void aDuplicateWaitsForTheRequestInFlightAndGetsItsAnswer() throws Exception {
        GatewayFilter filter = filter(new IdempotencyGatewayFilterFactory.Config());
        Sinks.Empty<Void> answer = upstream.holdNextAnswer();
        CompletableFuture<Void> first = filter.filter(exchange(keyed().body(BODY)), upstream).toFuture();
        MockServerWebExchange duplicate = exchange(keyed().body(BODY));
        CompletableFuture<Void> waiting = filter.filter(duplicate, upstream).toFuture();
        assertThat(store.signals().waiters(scope.hash())).as("the duplicate waits").isEqualTo(1);
        assertThat(waiting).isNotDone();

        answer.tryEmitEmpty();
        first.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        waiting.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

        assertThat(upstream.calls).hasValue(1);
        assertThat(duplicate.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(200));
        assertThat(duplicate.getResponse().getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(body(duplicate)).isEqualTo(ACCEPTED);
    }

    /**
     * On shard channels a waiter listens once Redis acknowledged its subscription; the duplicate's second look at
     * the record must come after that, or a settle between the two would publish to nobody.
     */
    @Test
    void aDuplicateLooksAtTheRecordAgainOnlyOnceItsWaiterListens() throws Exception {
        Sinks.Empty<Void> subscribed = Sinks.empty();
        store.listeningOnCue(subscribed.asMono());
        GatewayFilter filter = filter(new IdempotencyGatewayFilterFactory.Config());
        Sinks.Empty<Void> answer = upstream.holdNextAnswer();
        CompletableFuture<Void> first = filter.filter(exchange(keyed().body(BODY)), upstream).toFuture();
        MockServerWebExchange duplicate = exchange(keyed().body(BODY));
        CompletableFuture<Void> waiting = filter.filter(duplicate, upstream).toFuture();
        assertThat(store.record(scope).orElseThrow().waiters()).as("the first look only").isEqualTo(1);

        subscribed.tryEmitEmpty();
        assertThat(store.record(scope).orElseThrow().waiters()).as("then the second").isEqualTo(2);

        answer.tryEmitEmpty();
        first.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        waiting.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(duplicate.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(200));
    }

    @Test
    void anUpstreamTimeoutLeavesTheRecordUncertainAndItsRetryIsAConflict() {
        upstream.failNextWith(new TimeoutException("response timeout"));
        MockServerWebExchange timedOut = send(keyed().body(BODY));

        assertThat(timedOut.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(504));
        assertThat(store.record(scope).orElseThrow().state()).isEqualTo(RecordState.UNCERTAIN);

        MockServerWebExchange retry = send(keyed().body(BODY));
        assertUncertainConflict(retry);
        assertThat(upstream.calls).as("an uncertain request is not sent again").hasValue(1);
    }

    @Test
    void anUncertainRecordOfAReconcilingRouteIsQueuedForItsLookupTwiceTheLeaseLaterWithoutAResponseTimeout() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setReconcileUri("/merchants/by-name/{body:/merchant}");
        upstream.failNextWith(new TimeoutException("response timeout"));

        send(config, keyed().body(BODY));

        assertThat(store.record(scope).orElseThrow().state()).isEqualTo(RecordState.UNCERTAIN);
        assertThat(store.lookupDueAt(scope)).contains(clock.millis() + PROPERTIES.inFlightLease().toMillis() * 2);
    }

    @Test
    void reconcileAfterSaysWhenTheLookupIsDue() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setReconcileUri("/merchants/by-name/{body:/merchant}");
        config.setReconcileAfter(Duration.ofSeconds(7));
        upstream.failNextWith(new TimeoutException("response timeout"));

        send(config, keyed().body(BODY));

        assertThat(store.lookupDueAt(scope)).contains(clock.millis() + 7_000);
    }

    @Test
    void anUncertainRecordIsNotQueuedForALookupWhenTheRouteDoesNotReconcileOrTheBodyLacksTheValue() {
        upstream.failNextWith(new TimeoutException("response timeout"));
        send(keyed().body(BODY));
        assertThat(store.lookupDueAt(scope)).as("no reconcile-uri").isEmpty();

        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setReconcileUri("/merchants/by-tax-id/{body:/taxId}");
        IdempotencyScope other = new IdempotencyScope("", "r", new IdempotencyKey(KEY + "-2"));
        upstream.failNextWith(new TimeoutException("response timeout"));
        send(config, MockServerHttpRequest.post("/merchants").header("Idempotency-Key", KEY + "-2")
                .contentType(MediaType.APPLICATION_JSON).body(BODY));
        assertThat(store.record(other).orElseThrow().state()).isEqualTo(RecordState.UNCERTAIN);
        assertThat(store.lookupDueAt(other)).as("no taxId in the body: an operator settles it").isEmpty();
    }

    @Test
    void theLookupsKeyIsTheKeyHeaderAsForwarded() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setKeyFrom("header:X-GitHub-Delivery");
        config.setReconcileUri("/deliveries/{key}");
        config.setReconcileAfter(Duration.ofSeconds(1));
        String delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
        upstream.failNextWith(new TimeoutException("response timeout"));

        send(config, post().header("X-GitHub-Delivery", delivery).body(BODY));
        clock.advance(Duration.ofSeconds(2));

        assertThat(store.claimDue(10, Duration.ofSeconds(15)).collectList().block(WAIT))
                .singleElement().satisfies(due -> assertThat(due.values()).containsEntry("key", delivery));
    }

    /** As if the instance forwarding the first request had stopped renewing its lease (it died, or hangs). */
    @Test
    void aLapsedLeaseMakesTheRetryAConflictAndTheLateAnswerIsStillStored() throws Exception {
        Sinks.Empty<Void> answer = upstream.holdNextAnswer();
        GatewayFilter filter = filter(new IdempotencyGatewayFilterFactory.Config());
        CompletableFuture<Void> first = filter.filter(exchange(keyed().body(BODY)), upstream).toFuture();
        clock.advance(Duration.ofSeconds(61));

        MockServerWebExchange retry = exchange(keyed().body(BODY));
        filter.filter(retry, upstream).block(WAIT);
        assertUncertainConflict(retry);
        assertThat(store.record(scope).orElseThrow().uncertainReason())
                .contains(InMemoryIdempotencyStore.LEASE_LAPSED_REASON);

        answer.tryEmitEmpty();
        first.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(store.record(scope).orElseThrow().state()).as("the real answer settles the doubt")
                .isEqualTo(RecordState.COMPLETED);
        assertThat(upstream.calls).hasValue(1);
    }

    // ---- the IETF contract (route arg contract: ietf)

    @Test
    void underTheIetfContractAMissingKeyIs400ProblemDetailsAndNotForwarded() {
        MockServerWebExchange exchange = send(ietf(), post().body(BODY));

        assertProblem(exchange, 400, "idempotency-key-missing", "Idempotency key is missing",
                "The Idempotency-Key header is required.");
        assertThat(upstream.calls).hasValue(0);
        assertThat(store.size()).isZero();
    }

    @Test
    void underTheIetfContractAMalformedKeyIs400ProblemDetailsAndNotForwarded() {
        assertProblem(send(ietf(), post().header("Idempotency-Key", "a".repeat(65)).body(BODY)), 400,
                "idempotency-key-invalid", "Idempotency key is invalid",
                "The Idempotency-Key header must be at most 64 characters long.");
        assertProblem(send(ietf(), post().header("Idempotency-Key", "order 7f3a9c1e 0b2d").body(BODY)), 400,
                "idempotency-key-invalid", "Idempotency key is invalid",
                "The Idempotency-Key header may only contain letters, digits, '-' and '_'.");
        assertThat(upstream.calls).hasValue(0);
        assertThat(store.size()).isZero();
    }

    @Test
    void underTheIetfContractAnEventWithoutItsIdIsAMissingKey() {
        IdempotencyGatewayFilterFactory.Config config = ietf();
        config.setKeyFrom("body:/id");

        assertProblem(send(config, post().body("{\"type\":\"ping\"}")), 400, "idempotency-key-missing",
                "Idempotency key is missing",
                "The idempotency key is taken from the request body at /id; it is missing.");
        assertThat(upstream.calls).hasValue(0);
    }

    @Test
    void underTheIetfContractTheSameKeyWithAnotherPayloadIs422ProblemDetails() {
        GatewayFilter filter = filter(ietf());
        through(filter, keyed().body(BODY));
        MockServerWebExchange other = through(filter, keyed().body("{\"merchant\":\"acme\",\"amount\":43}"));

        assertProblem(other, 422, "idempotency-key-reused", "Idempotency key is already used",
                "The idempotency key was already used with a different payload.");
        assertThat(upstream.calls).hasValue(1);
    }

    @Test
    void underTheIetfContractADuplicateOfARequestInFlightIs409ProblemDetailsWithRetryAfter() throws Exception {
        IdempotencyGatewayFilterFactory.Config config = ietf();
        config.setInFlightWait(Duration.ZERO);
        GatewayFilter filter = filter(config);
        Sinks.Empty<Void> answer = upstream.holdNextAnswer();
        CompletableFuture<Void> first = filter.filter(exchange(keyed().body(BODY)), upstream).toFuture();
        assertThat(store.record(scope).orElseThrow().state()).isEqualTo(RecordState.IN_FLIGHT);

        MockServerWebExchange duplicate = through(filter, keyed().body(BODY));

        assertProblem(duplicate, 409, "request-in-flight", "A request is outstanding for this idempotency key",
                "A request with this idempotency key is still being processed. Retry later with the same key and "
                        + "payload.");
        assertThat(duplicate.getResponse().getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        assertThat(upstream.calls).hasValue(1);
        answer.tryEmitEmpty();
        first.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Test
    void underTheIetfContractTheRetryOfAnUncertainRequestIs409ProblemDetailsWithRetryAfter() {
        GatewayFilter filter = filter(ietf());
        upstream.failNextWith(new TimeoutException("response timeout"));
        MockServerWebExchange timedOut = through(filter, keyed().body(BODY));
        assertProblem(timedOut, 504, "upstream-timeout", "Upstream timed out, outcome unknown",
                GatewayError.outcomeUnknownTimeout().message());

        MockServerWebExchange retry = through(filter, keyed().body(BODY));

        assertProblem(retry, 409, "outcome-uncertain", "The outcome of the request with this idempotency key is "
                + "unknown", GatewayError.uncertainRetry(Duration.ofSeconds(1)).message());
        assertThat(retry.getResponse().getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        assertThat(upstream.calls).as("an uncertain request is not sent again").hasValue(1);
    }

    @Test
    void theIetfContractCanBeTheDefaultAndARouteCanStillChooseOnboarding() {
        RouteDefaults ietfByDefault = properties(Map.of("contract", "ietf"));
        MockServerWebExchange byDefault = exchange(post().body(BODY));
        factory(ietfByDefault, store).apply(new IdempotencyGatewayFilterFactory.Config()).filter(byDefault, upstream)
                .block(WAIT);
        assertThat(byDefault.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(400));

        IdempotencyGatewayFilterFactory.Config onboarding = new IdempotencyGatewayFilterFactory.Config();
        onboarding.setContract("onboarding");
        MockServerWebExchange chosen = exchange(post().body(BODY));
        factory(ietfByDefault, store).apply(onboarding).filter(chosen, upstream).block(WAIT);
        assertEnvelope(chosen, 422, "The Idempotency-Key header is required.");
    }

    @Test
    void anUnknownContractIsRefusedNamingTheArgAndTheAllowedValues() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setRouteId("r");
        config.setContract("rfc9457");

        assertThatThrownBy(() -> filter(config)).isInstanceOfSatisfying(InvalidRouteSetting.class, invalid -> {
            assertThat(invalid.setting()).contains("contract");
            assertThat(invalid.setOnRoute()).isTrue();
            assertThat(invalid.rule()).isEqualTo("contract must be one of onboarding, ietf; was 'rfc9457'");
        });
    }

    @Test
    void anUpstreamNeverReachedFreesTheKeyForTheRetry() {
        upstream.failNextWith(new ConnectException("Connection refused"));
        MockServerWebExchange refused = send(keyed().body(BODY));

        assertEnvelope(refused, 502, "The upstream service could not be reached; the request was not processed. "
                + "Retry with the same key.");
        assertThat(refused.getResponse().getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        assertThat(store.record(scope)).as("released").isEmpty();

        send(keyed().body(BODY));
        assertThat(upstream.calls).hasValue(2);
        assertThat(store.record(scope).orElseThrow().state()).isEqualTo(RecordState.COMPLETED);
    }

    // ---- the store away

    @Test
    void withTheStoreUnavailableTheRequestIsRefusedWith503() {
        GatewayFilter filter = factory(defaults(false), new ReserveFails(store)).apply(
                new IdempotencyGatewayFilterFactory.Config());
        MockServerWebExchange exchange = exchange(keyed().body(BODY));
        filter.filter(exchange, upstream).block(WAIT);

        assertEnvelope(exchange, 503, "Idempotency protection is temporarily unavailable; the request was not "
                + "processed. Retry later with the same key.");
        assertThat(exchange.getResponse().getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        assertThat(upstream.calls).hasValue(0);
        assertThat(events.count("store-unavailable")).isEqualTo(1);
    }

    @Test
    void aTrackedAnswerReachesTheClientOnlyOnceItsRecordAndProcessLinkAreStored() throws Exception {
        // A client that has the 202's last byte may read the process's status at once: the link must exist then, or
        // that read is not seen as the process's end. The store links the process in the step that stores the 202.
        List<String> order = new CopyOnWriteArrayList<>();
        CompleteHeldUntilLetGo links = new CompleteHeldUntilLetGo(store, order);
        MockServerWebExchange exchange = exchange(keyed().body(BODY));
        StringBuilder received = new StringBuilder();
        exchange.getResponse().setWriteHandler(body -> body
                .doOnNext(buffer -> {
                    received.append(buffer.toString(StandardCharsets.UTF_8));
                    DataBufferUtils.release(buffer);
                })
                .doOnComplete(() -> order.add("client has the last byte"))
                .then());
        CompletableFuture<Void> answered = factory(defaults(false), links).apply(tracked()).filter(exchange, upstream)
                .toFuture();

        links.asked.asMono().block(WAIT);
        links.letGo.tryEmitEmpty();
        answered.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

        assertThat(order).containsExactly("store asked", "stored", "client has the last byte");
        assertThat(received).hasToString(ACCEPTED);
        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(202));
        assertThat(store.processEnded("r", "p-1", "COMPLETED", Duration.ofHours(1)).block(WAIT))
                .as("the process was linked with the record").isTrue();
    }

    @Test
    void aTrackedAnswerWhoseRecordIsNeverStoredStillReachesTheClient() throws Exception {
        // The hold is bounded (two store timeouts) although the record's write is retried for longer: the client
        // gets its answer while the store call goes on.
        List<String> order = new CopyOnWriteArrayList<>();
        MockServerWebExchange exchange = exchange(keyed().body(BODY));
        exchange.getResponse().setWriteHandler(body -> body.doOnNext(DataBufferUtils::release)
                .doOnComplete(() -> order.add("client has the last byte")).then());
        factory(defaults(false), new CompleteNeverAnswers(store)).apply(tracked()).filter(exchange, upstream)
                .subscribe();

        Flux.interval(Duration.ofMillis(20)).map(tick -> order.size()).filter(size -> size > 0).next()
                .block(WAIT.multipliedBy(2));
        assertThat(order).containsExactly("client has the last byte");
        assertThat(store.record(scope).orElseThrow().state()).as("the record's write is still under way")
                .isEqualTo(RecordState.IN_FLIGHT);
    }

    @Test
    void anUntrackedAnswerIsNotHeldForItsRecord() throws Exception {
        List<String> order = new CopyOnWriteArrayList<>();
        CompleteHeldUntilLetGo held = new CompleteHeldUntilLetGo(store, order);
        MockServerWebExchange exchange = exchange(keyed().body(BODY));
        exchange.getResponse().setWriteHandler(body -> body.doOnNext(DataBufferUtils::release)
                .doOnComplete(() -> order.add("client has the last byte")).then());
        CompletableFuture<Void> answered = factory(defaults(false), held)
                .apply(new IdempotencyGatewayFilterFactory.Config()).filter(exchange, upstream).toFuture();

        held.asked.asMono().block(WAIT);
        Flux.interval(Duration.ofMillis(10)).filter(tick -> order.contains("client has the last byte")).next()
                .block(WAIT);
        held.letGo.tryEmitEmpty();
        answered.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

        assertThat(order).as("the client had its answer while the record's write was held")
                .containsExactlyInAnyOrder("store asked", "client has the last byte", "stored").endsWith("stored");
        assertThat(store.record(scope).orElseThrow().state()).isEqualTo(RecordState.COMPLETED);
    }

    @Test
    void aReservationWhoseCallNeverSubscribesIsAnswered503() {
        // As a Redis call stuck opening its connection: Reactor's timeout() never starts when onSubscribe never
        // comes, the store call's own deadline does.
        GatewayFilter filter = factory(defaults(false, Duration.ofMillis(200)), new ForwardingStore(store) {
            @Override
            public Mono<Reservation> reserve(ReservationRequest request) {
                return Mono.from(subscriber -> { });
            }
        }).apply(new IdempotencyGatewayFilterFactory.Config());
        MockServerWebExchange exchange = exchange(keyed().body(BODY));
        filter.filter(exchange, upstream).block(WAIT);

        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(503));
        assertThat(upstream.calls).hasValue(0);
    }

    @Test
    void aReservationWhoseAnswerNeverCameIsReleasedSoTheRetryIsForwarded() {
        // The reserve ran in the store, its answer never reached the gateway: a record with an owner nobody holds.
        GatewayFilter lost = factory(defaults(false, Duration.ofMillis(200)), new ForwardingStore(store) {
            @Override
            public Mono<Reservation> reserve(ReservationRequest request) {
                return delegate.reserve(request).then(Mono.never());
            }
        }).apply(new IdempotencyGatewayFilterFactory.Config());
        MockServerWebExchange refused = exchange(keyed().body(BODY));
        lost.filter(refused, upstream).block(WAIT);
        assertThat(refused.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(503));

        awaitRecord(record -> record.isEmpty(), "released in the background");
        MockServerWebExchange retry = send(keyed().body(BODY));
        assertThat(retry.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(202));
        assertThat(upstream.calls).hasValue(1);
    }

    @Test
    void aReservationRefusedBeforeItWasSentLeavesNothingToRelease() {
        // While Redis is away every request is refused before its reserve is written: nothing can run later, and a
        // retrying release per refused request would only load the store when it comes back. The release of a
        // reserve given up is asked synchronously, as the filter answers: counted once the answer is there.
        AtomicInteger releases = new AtomicInteger();
        GatewayFilter notSent = factory(defaults(false, Duration.ofMillis(200)), new ForwardingStore(store) {
            @Override
            public Mono<Reservation> reserve(ReservationRequest request) {
                return Mono.error(new StoreCallNotSent(new IllegalStateException("Commands are rejected")));
            }

            @Override
            public Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner) {
                releases.incrementAndGet();
                return delegate.release(scope, owner);
            }
        }).apply(new IdempotencyGatewayFilterFactory.Config());
        MockServerWebExchange refused = exchange(keyed().body(BODY));
        notSent.filter(refused, upstream).block(WAIT);
        assertThat(refused.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(503));
        assertThat(releases).as("nothing sent, nothing to undo").hasValue(0);

        GatewayFilter timedOut = factory(defaults(false, Duration.ofMillis(200)), new ForwardingStore(store) {
            @Override
            public Mono<Reservation> reserve(ReservationRequest request) {
                return Mono.never();
            }

            @Override
            public Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner) {
                releases.incrementAndGet();
                return delegate.release(scope, owner);
            }
        }).apply(new IdempotencyGatewayFilterFactory.Config());
        MockServerWebExchange late = exchange(keyed().body(BODY));
        timedOut.filter(late, upstream).block(WAIT);
        assertThat(late.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(503));
        assertThat(releases).as("a reserve that may have run is released").hasPositiveValue();
    }

    @Test
    void aStoreThatNeverAnswersTheCompletionDoesNotHoldTheClientsAnswerPastTheSettleDeadline() {
        // Each attempt is bounded, but five retries with back-off add up to seconds: the client waits three
        // store-timeouts at most, the store call goes on.
        GatewayFilter filter = factory(defaults(false, Duration.ofMillis(200)), new ForwardingStore(store) {
            @Override
            public Mono<CompletionResult> complete(Completion completion) {
                return Mono.never();
            }
        }).apply(new IdempotencyGatewayFilterFactory.Config());
        MockServerWebExchange exchange = exchange(keyed().body(BODY));
        filter.filter(exchange, upstream).block(WAIT);

        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(202));
        assertThat(body(exchange)).isEqualTo(ACCEPTED);
    }

    @Test
    void aReleaseRefusedManyTimesIsRetriedUntilItIsDone() {
        // A Redis away for a while after a 503 that is no result: the key must end free, not lapse to UNCERTAIN.
        AtomicInteger refusals = new AtomicInteger();
        GatewayFilter filter = factory(defaults(false, Duration.ofMillis(200)), new ForwardingStore(store) {
            @Override
            public Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner) {
                return refusals.incrementAndGet() <= 6
                        ? Mono.error(new IllegalStateException("Redis is away"))
                        : delegate.release(scope, owner);
            }
        }).apply(new IdempotencyGatewayFilterFactory.Config());
        upstream.answerNextWith(503, "{\"error\":\"busy\"}");
        MockServerWebExchange busy = exchange(keyed().body(BODY));
        filter.filter(busy, upstream).block(WAIT);
        assertThat(busy.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(503));

        awaitRecord(record -> record.isEmpty(), "released once the store answers");
        assertThat(refusals.get()).isEqualTo(7);
    }

    @Test
    void aReleaseIsStillTriedOnceTheLeaseHasEnded() {
        // Redis away for longer than the lease: given up at the lease's end, the never-sent request's record would
        // lapse to UNCERTAIN ("outcome unknown" for every retry). The store refuses for three leases here. (The
        // lease stays well above the settle deadline, 3 x 100 ms, that the client's answer waits for the release:
        // the stall watchdog, one lease, must not fire first.)
        Duration lease = Duration.ofSeconds(1);
        AtomicLong refusingUntil = new AtomicLong();
        AtomicInteger refusals = new AtomicInteger();
        GatewayFilter filter = factory(defaults(false, Duration.ofMillis(100)), new ForwardingStore(store) {
            @Override
            public Mono<SettleResult> release(IdempotencyScope scope, OwnerToken owner) {
                refusingUntil.compareAndSet(0, System.nanoTime() + lease.multipliedBy(3).toNanos());
                if (System.nanoTime() - refusingUntil.get() < 0) {
                    refusals.incrementAndGet();
                    return Mono.error(new IllegalStateException("Redis is away"));
                }
                return delegate.release(scope, owner);
            }
        }).apply(config -> config.setInFlightLease(lease));
        upstream.answerNextWith(503, "{\"error\":\"busy\"}");
        MockServerWebExchange busy = exchange(keyed().body(BODY));
        filter.filter(busy, upstream).block(WAIT);
        assertThat(busy.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(503));

        awaitRecord(record -> record.isEmpty(), "released once the store answers, three leases later");
        assertThat(refusals.get()).isGreaterThan(1);
    }

    @Test
    void withTheStoreUnavailableARouteThatSaysSoForwardsUnprotected() {
        GatewayFilter filter = factory(defaults(true), new ReserveFails(store)).apply(
                new IdempotencyGatewayFilterFactory.Config());
        MockServerWebExchange exchange = exchange(keyed().body(BODY));
        filter.filter(exchange, upstream).block(WAIT);

        assertThat(upstream.calls).hasValue(1);
        assertThat(upstream.bodies).as("the body already read is forwarded").containsExactly(BODY);
        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(202));
        assertThat(body(exchange)).isEqualTo(ACCEPTED);
        assertThat(store.size()).as("nothing recorded").isZero();
        assertThat(events.count("forwarded-unprotected")).isEqualTo(1);
    }

    @Test
    void aRequestWhoseOwnReservationWasReleasedBeforeItLandedIsRefusedNeverForwarded() {
        // The release reaches the store before the reserve (a reserve re-sent after a reconnect): even a route that
        // forwards while the store is unavailable must not send it.
        GatewayFilter filter = factory(defaults(true), new ReleasedBeforeReserved(store)).apply(
                new IdempotencyGatewayFilterFactory.Config());
        MockServerWebExchange exchange = exchange(keyed().body(BODY));
        filter.filter(exchange, upstream).block(WAIT);

        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(503));
        assertThat(exchange.getResponse().getHeaders().getFirst("Retry-After")).isNotNull();
        assertThat(upstream.calls).hasValue(0);
        assertThat(store.size()).as("no record nobody holds").isZero();
        assertThat(events.count("forwarded-unprotected")).isZero();
    }

    // ---- answers that are no result

    @Test
    void anAnswerThatIsNoResultIsPassedOnAndFreesTheKey() {
        upstream.answerNextWith(503, "{\"error\":\"busy\"}");
        MockServerWebExchange busy = send(keyed().body(BODY));

        assertThat(busy.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(503));
        assertThat(body(busy)).isEqualTo("{\"error\":\"busy\"}");
        assertThat(store.record(scope)).as("released").isEmpty();

        MockServerWebExchange retry = send(keyed().body(BODY));
        assertThat(upstream.calls).as("the retry is forwarded").hasValue(2);
        assertThat(retry.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(202));
        assertThat(store.record(scope).orElseThrow().state()).isEqualTo(RecordState.COMPLETED);
    }

    // ---- fixture

    static MockServerHttpRequest.BodyBuilder post() {
        return MockServerHttpRequest.post("/merchants").contentType(MediaType.APPLICATION_JSON);
    }

    static MockServerHttpRequest.BodyBuilder keyed() {
        return post().header("Idempotency-Key", KEY);
    }

    static MockServerWebExchange exchange(MockServerHttpRequest.BaseBuilder<?> request) {
        MockServerWebExchange exchange = MockServerWebExchange.from(request);
        exchange.getAttributes().put(ServerWebExchangeUtils.GATEWAY_ROUTE_ATTR, ROUTE);
        return exchange;
    }

    static MockServerWebExchange exchange(MockServerHttpRequest request) {
        MockServerWebExchange exchange = MockServerWebExchange.from(request);
        exchange.getAttributes().put(ServerWebExchangeUtils.GATEWAY_ROUTE_ATTR, ROUTE);
        return exchange;
    }

    /** Through one filter (one route: its remembered fingerprints are kept between requests). */
    MockServerWebExchange through(GatewayFilter filter, MockServerHttpRequest request) {
        MockServerWebExchange exchange = exchange(request);
        filter.filter(exchange, upstream).block(WAIT);
        return exchange;
    }

    MockServerWebExchange send(MockServerHttpRequest request) {
        return send(new IdempotencyGatewayFilterFactory.Config(), request);
    }

    MockServerWebExchange send(IdempotencyGatewayFilterFactory.Config config, MockServerHttpRequest request) {
        MockServerWebExchange exchange = exchange(request);
        filter(config).filter(exchange, upstream).block(WAIT);
        return exchange;
    }

    GatewayFilter filter(IdempotencyGatewayFilterFactory.Config config) {
        return factory(defaults(false), store).apply(config);
    }

    /** As IdempotencyFilterAutoConfiguration builds the factory, on this test's store and clock. */
    IdempotencyGatewayFilterFactory factory(RouteDefaults defaults, IdempotencyStore store) {
        LeaseRenewals leases = new LeaseRenewals(store, Duration.ofMillis(50));
        PendingSettles settles = new PendingSettles(defaults.storeTimeout().multipliedBy(3));
        pendingSettles.add(settles);
        leaseRenewals.add(leases);
        ProcessWatcher processes = new ProcessWatcher(store,
                store instanceof ProcessQueue queue ? Optional.of(queue) : Optional.empty(), WebClient.create(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(60), Duration.ofSeconds(60), ProcessWatcher.ROUND_LIMIT);
        watchers.add(processes);
        return new IdempotencyGatewayFilterFactory(defaults, new IdempotencyFilterServices(store,
                new PrincipalOrHeaderTenantResolver(null), clock, events, leases,
                new RequestReports(new IdempotencyMetrics(meters), TraceIds.NONE), settles),
                new RouteWatchers(processes, new ProcessStatusObserver(processes, defaults.storeTimeout(), events),
                        Optional.of(new Reconciler(Optional.empty(), WebClient.create(), Duration.ofSeconds(1),
                                Duration.ofSeconds(5), Duration.ofMinutes(5), defaults.storeTimeout(),
                                Duration.ofMinutes(1), new IdempotencyMetrics(meters)))),
                Optional.empty());
    }

    /** The defaults of an application that sets no property but these two. */
    static RouteDefaults defaults(boolean forwardWhenStoreUnavailable) {
        return defaults(forwardWhenStoreUnavailable, PROPERTIES.storeTimeout());
    }

    static RouteDefaults defaults(boolean forwardWhenStoreUnavailable, Duration storeTimeout) {
        return properties(Map.of("store-unavailable", forwardWhenStoreUnavailable ? "forward" : "reject",
                "store-timeout", storeTimeout.toMillis() + "ms"));
    }

    /** The {@code idempotency.*} properties with these set (names without the prefix), bound as Boot binds them. */
    static IdempotencyProperties properties(Map<String, String> set) {
        Map<String, String> prefixed = new HashMap<>();
        set.forEach((name, value) -> prefixed.put("idempotency." + name, value));
        return new Binder(new MapConfigurationPropertySource(prefixed)).bindOrCreate("idempotency",
                IdempotencyProperties.class);
    }

    /** Polls (bounded) until the scope's record is as expected: background store calls end after the answer. */
    void awaitRecord(Predicate<Optional<InMemoryIdempotencyStore.StoredRecord>> expected, String what) {
        Flux.interval(Duration.ofMillis(10)).onBackpressureDrop().filter(t -> expected.test(store.record(scope)))
                .next().timeout(Duration.ofSeconds(20), Mono.empty()).block();
        assertThat(expected.test(store.record(scope))).as(what).isTrue();
    }

    static String body(MockServerWebExchange exchange) {
        return exchange.getResponse().getBodyAsString().block(WAIT);
    }

    /** The gateway's error body, dated by the filter's clock (which stands still unless a test moves it). */
    void assertEnvelope(MockServerWebExchange exchange, int status, String message) {
        String date = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss").format(clock.instant().atOffset(
                ZoneOffset.UTC)) + "+00:00";
        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(status));
        assertThat(exchange.getResponse().getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_JSON);
        assertThat(body(exchange)).isEqualTo("{\"status\":{\"status\":\"FAILED\",\"reason\":" + status
                + ",\"message\":\"" + message + "\",\"date\":\"" + date + "\"}}");
    }

    /** An RFC 9457 body with exactly these members, in this order, as the IETF contract writes it. */
    static void assertProblem(MockServerWebExchange exchange, int status, String type, String title, String detail) {
        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatusCode.valueOf(status));
        assertThat(exchange.getResponse().getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON);
        String body = body(exchange);
        JsonNode problem = JsonMapper.builder().build().readTree(body);
        assertThat(problem.propertyNames()).containsExactly("type", "title", "status", "detail");
        assertThat(problem.get("type").asString()).isEqualTo("https://retrysafe.dev/problems/" + type);
        assertThat(problem.get("title").asString()).isEqualTo(title);
        assertThat(problem.get("status").isInt()).isTrue();
        assertThat(problem.get("status").asInt()).isEqualTo(status);
        assertThat(problem.get("detail").asString()).isEqualTo(detail);
        assertThat(exchange.getResponse().getHeaders().getContentLength())
                .isEqualTo(body.getBytes(StandardCharsets.UTF_8).length);
    }

    static IdempotencyGatewayFilterFactory.Config ietf() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setContract("ietf");
        return config;
    }

    void assertUncertainConflict(MockServerWebExchange exchange) {
        assertEnvelope(exchange, 409, "The outcome of the original request with this idempotency key is unknown "
                + "(it was sent, but no complete answer came back), so it is not sent again. Check the resource's "
                + "state, or retry later with the same key and payload once it has been reconciled.");
        assertThat(exchange.getResponse().getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
    }

    /**
     * The upstream: reads the forwarded body, then answers 202 with a JSON body and a Location through the
     * exchange's response, as NettyWriteResponseFilter would. The next answer can be held, replaced or made to
     * fail.
     */
    static final class Upstream implements GatewayFilterChain {
        final AtomicInteger calls = new AtomicInteger();
        final List<String> bodies = new CopyOnWriteArrayList<>();
        final List<ServerWebExchange> exchanges = new CopyOnWriteArrayList<>();
        private volatile Mono<Void> nextHold = Mono.empty();
        private volatile Consumer<ServerHttpResponse> nextAnswer;
        private volatile String nextBody;
        private volatile Throwable nextFailure;

        /** The next call waits for the returned sink before it answers. */
        Sinks.Empty<Void> holdNextAnswer() {
            Sinks.Empty<Void> hold = Sinks.empty();
            nextHold = hold.asMono();
            return hold;
        }

        void answerNextWith(int status, String body) {
            nextAnswer = response -> {
                response.setStatusCode(HttpStatusCode.valueOf(status));
                response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
                response.getHeaders().set(HttpHeaders.RETRY_AFTER, "2");
                response.getHeaders().setContentLength(body.length());
            };
            nextBody = body;
        }

        /** The next call fails after the request was sent, before any answer (a timeout, a broken connection). */
        void failNextWith(Throwable failure) {
            nextFailure = failure;
        }

        @Override
        public Mono<Void> filter(ServerWebExchange exchange) {
            calls.incrementAndGet();
            exchanges.add(exchange);
            Mono<Void> hold = nextHold;
            nextHold = Mono.empty();
            Consumer<ServerHttpResponse> answer = nextAnswer;
            String body = nextBody;
            nextAnswer = null;
            nextBody = null;
            Throwable failure = nextFailure;
            nextFailure = null;
            Mono<Void> read = DataBufferUtils.join(exchange.getRequest().getBody())
                    .map(buffer -> {
                        try {
                            return buffer.toString(StandardCharsets.UTF_8);
                        } finally {
                            DataBufferUtils.release(buffer);
                        }
                    })
                    .defaultIfEmpty("")
                    .doOnNext(bodies::add)
                    .then(hold);
            if (failure != null) {
                return read.then(Mono.error(failure));
            }
            return read.then(Mono.defer(() -> {
                ServerHttpResponse response = exchange.getResponse();
                byte[] bytes;
                if (answer != null) {
                    answer.accept(response);
                    bytes = body.getBytes(StandardCharsets.UTF_8);
                } else {
                    response.setStatusCode(HttpStatusCode.valueOf(202));
                    response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
                    response.getHeaders().set(HttpHeaders.LOCATION, "/merchants/42");
                    bytes = ACCEPTED.getBytes(StandardCharsets.UTF_8);
                }
                return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(bytes)));
            }));
        }
    }

    static IdempotencyGatewayFilterFactory.Config tracked() {
        IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
        config.setProcessStatusUri("/processes/{processId}");
        return config;
    }

    /** The in-memory store whose record writes wait until the test lets them go; the order of events is noted. */
    static final class CompleteHeldUntilLetGo extends ForwardingStore {
        final Sinks.Empty<Void> asked = Sinks.empty();
        final Sinks.Empty<Void> letGo = Sinks.empty();
        private final List<String> order;

        CompleteHeldUntilLetGo(IdempotencyStore delegate, List<String> order) {
            super(delegate);
            this.order = order;
        }

        @Override
        public Mono<CompletionResult> complete(Completion completion) {
            return Mono.defer(() -> {
                order.add("store asked");
                asked.tryEmitEmpty();
                return letGo.asMono();
            }).then(delegate.complete(completion))
                    .doOnSuccess(stored -> order.add("stored"));
        }
    }

    /** The in-memory store whose record writes never get an answer. */
    static final class CompleteNeverAnswers extends ForwardingStore {
        CompleteNeverAnswers(IdempotencyStore delegate) {
            super(delegate);
        }

        @Override
        public Mono<CompletionResult> complete(Completion completion) {
            return Mono.never();
        }
    }

    /** The in-memory store where each request's release lands before its reserve. */
    static final class ReleasedBeforeReserved extends ForwardingStore {
        ReleasedBeforeReserved(IdempotencyStore delegate) {
            super(delegate);
        }

        @Override
        public Mono<Reservation> reserve(ReservationRequest request) {
            return delegate.release(request.scope(), request.owner()).then(delegate.reserve(request));
        }
    }

    /** The in-memory store with Redis away: every reservation fails. */
    static class ReserveFails extends ForwardingStore {
        ReserveFails(IdempotencyStore delegate) {
            super(delegate);
        }

        @Override
        public Mono<Reservation> reserve(ReservationRequest request) {
            return Mono.error(new IllegalStateException("Unable to connect to Redis"));
        }
    }
}
