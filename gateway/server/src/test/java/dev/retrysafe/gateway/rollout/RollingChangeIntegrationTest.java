package dev.retrysafe.gateway.rollout;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathMatching;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.support.Gateways;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.gateway.event.RefreshRoutesEvent;
import org.springframework.cloud.gateway.event.RefreshRoutesResultEvent;
import org.springframework.cloud.gateway.filter.FilterDefinition;
import org.springframework.cloud.gateway.handler.predicate.PredicateDefinition;
import org.springframework.cloud.gateway.route.RouteDefinition;
import org.springframework.cloud.gateway.route.RouteDefinitionWriter;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Mono;

/**
 * A config change rolling through a fleet, as an operator makes one: instances with the old and the new route side by
 * side on one Redis, the client's identical retry landing on whichever the load balancer picks. The retry is answered
 * with the first result in both directions; a route renamed with its {@code operation} kept keeps its records; one
 * renamed without it starts afresh (docs/operations/changing-config.md says so); a change made at run time
 * ({@code RefreshRoutesEvent}) behaves as a rolled one.
 */
class RollingChangeIntegrationTest {
    static final String SHIPPED_ARRAYS = "integrations,paymentMethods,sites";
    static final String BODY = "{\"legalName\":\"ACME\",\"paymentMethods\":[\"CARD\",\"PIX\"],"
            + "\"sentAt\":\"2026-12-05T10:00:00Z\"}";
    static final Duration WAIT = Duration.ofSeconds(20);
    static final String RESERVATION_LOOP = "dev.retrysafe.gateway.idempotency.filter.ReservationLoop";

    static EmbeddedRedisServer redis;
    static WireMockServer upstream;
    /** The onboarding route as shipped. */
    static ConfigurableApplicationContext shipped;
    /** The same route with every kind of rule changed: an unordered array dropped, a field ignored, a header added. */
    static ConfigurableApplicationContext changed;
    /**
     * The route renamed onboarding-v2, with and without {@code operation: onboarding}. Every instance lives as long as
     * the class: closing one Spring context in a JVM disposes Reactor Netty's global resources under the others.
     */
    static ConfigurableApplicationContext renamedKeepingOperation;
    static ConfigurableApplicationContext renamed;
    /** The reservation loop's DEBUG lines, where a rule change met is said. */
    static final ListAppender<ILoggingEvent> ruleChanges = new ListAppender<>();

    @BeforeAll
    static void start() {
        redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
        upstream = new WireMockServer(options().dynamicPort());
        upstream.start();
        shipped = gateway("onboarding", Map.of("unordered-arrays", SHIPPED_ARRAYS));
        changed = gateway("onboarding", Map.of("unordered-arrays", "integrations,paymentMethods",
                "fingerprint-ignore", "/sentAt", "fingerprint-headers", "X-Api-Version"));
        renamedKeepingOperation = gateway("onboarding-v2", Map.of("operation", "onboarding",
                "unordered-arrays", SHIPPED_ARRAYS));
        renamed = gateway("onboarding-v2", Map.of("unordered-arrays", SHIPPED_ARRAYS));
        // Attached once every gateway has started: each start resets the JVM's log configuration.
        Logger loop = (Logger) LoggerFactory.getLogger(RESERVATION_LOOP);
        ruleChanges.setContext(loop.getLoggerContext());
        ruleChanges.start();
        loop.addAppender(ruleChanges);
    }

    static ConfigurableApplicationContext gateway(String routeId, Map<String, String> args) {
        return Gateways.start("http://127.0.0.1:" + upstream.port(), routeId, args, Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", String.valueOf(redis.port()),
                "idempotency.record-counts.enabled", "false",
                "logging.level." + RESERVATION_LOOP, "DEBUG"));
    }

    @AfterAll
    static void stop() throws Exception {
        Gateways.closeAll(renamed, renamedKeepingOperation, changed, shipped);
        upstream.stop();
        redis.stop();
    }

    @BeforeEach
    void upstreamAccepts() {
        upstream.resetAll();
        answerWithANewProcess();
    }

    /** From now on each write the upstream receives names this new process (the latest stub wins). */
    static void answerWithANewProcess() {
        upstream.stubFor(post(urlPathMatching("/.*")).willReturn(aResponse().withStatus(202)
                .withHeader("Content-Type", "application/json").withHeader("Location", "/processes/p-1")
                .withBody("{\"processId\":\"" + UUID.randomUUID() + "\",\"status\":\"PENDING\"}")));
    }

    static ResponseEntity<String> send(ConfigurableApplicationContext gateway, String path, String key, String body) {
        return Gateways.client(gateway).post().uri(path).header("Idempotency-Key", key)
                .header("Content-Type", "application/json").header("X-Api-Version", "2").bodyValue(body)
                .exchangeToMono(r -> r.toEntity(String.class)).block(WAIT);
    }

    static List<String> debugLines() {
        synchronized (ruleChanges) {
            return ruleChanges.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        }
    }

    static int writesReceived(String path) {
        return upstream.findAll(postRequestedFor(urlEqualTo(path))).size();
    }

    static void assertReplayOf(ResponseEntity<String> first, ResponseEntity<String> retry) {
        assertThat(first.getStatusCode().value()).isEqualTo(202);
        assertThat(retry.getStatusCode().value()).as(retry.toString()).isEqualTo(200);
        assertThat(retry.getHeaders().getFirst("Idempotency-Replayed")).isEqualTo("true");
        assertThat(retry.getHeaders().getFirst("Location")).isNull();
        assertThat(retry.getBody()).isEqualTo(first.getBody());
    }

    /** Both directions of the rollout: the first write through either instance, the identical retry the other. */
    @ParameterizedTest(name = "first write through the {0} instance")
    @ValueSource(strings = {"shipped", "changed"})
    void anIdenticalRetryThroughTheOtherInstanceReplaysTheFirstResult(String firstThrough) {
        boolean shippedFirst = firstThrough.equals("shipped");
        String key = UUID.randomUUID().toString();
        ResponseEntity<String> first = send(shippedFirst ? shipped : changed, "/merchants", key, BODY);
        assertReplayOf(first, send(shippedFirst ? changed : shipped, "/merchants", key, BODY));
        assertThat(writesReceived("/merchants")).isEqualTo(1);
    }

    /**
     * What only the new rule forgives (a new sentAt) cannot be told from a record the old rules wrote: 409, as before
     * the change, never a second write. A record the new rules wrote forgives it on every instance of the new rules.
     */
    @Test
    void acrossTheChangeAnotherPayloadIsStill409AndNothingIsForwardedTwice() {
        String key = UUID.randomUUID().toString();
        send(shipped, "/merchants", key, BODY);
        ResponseEntity<String> restamped = send(changed, "/merchants", key, BODY.replace("10:00:00Z", "10:00:07Z"));
        assertThat(restamped.getStatusCode().value()).isEqualTo(409);
        assertThat(restamped.getBody()).contains("The idempotency key was already used with a different payload.");
        assertThat(debugLines()).as("the rule change named at DEBUG").anySatisfy(line -> assertThat(line)
                .contains("its record was fingerprinted under rules 'c1;arrays=integrations,paymentMethods,sites', "
                        + "this route's are 'c1;arrays=integrations,paymentMethods;ignore=/sentAt;headers=x-api-version'")
                .contains("another payload (409)"));
        assertThat(send(shipped, "/merchants", key, BODY.replace("ACME", "OTHER")).getStatusCode().value())
                .isEqualTo(409);

        String newKey = UUID.randomUUID().toString();
        ResponseEntity<String> first = send(changed, "/merchants", newKey, BODY);
        assertReplayOf(first, send(changed, "/merchants", newKey, BODY.replace("10:00:00Z", "10:00:07Z")));
        assertThat(writesReceived("/merchants")).isEqualTo(2);
    }

    @Test
    void aRouteRenamedWithItsOperationKeptReplaysAndOneRenamedWithoutItStartsAfresh() {
        String key = UUID.randomUUID().toString();
        ResponseEntity<String> first = send(shipped, "/merchants", key, BODY);
        assertReplayOf(first, send(renamedKeepingOperation, "/merchants", key, BODY));
        assertThat(writesReceived("/merchants")).isEqualTo(1);

        // Documented: without operation the scope is the new route id, so its records are new ones.
        answerWithANewProcess();
        ResponseEntity<String> afresh = send(renamed, "/merchants", key, BODY);
        assertThat(afresh.getStatusCode().value()).isEqualTo(202);
        assertThat(afresh.getBody()).isNotEqualTo(first.getBody());
        assertThat(writesReceived("/merchants")).isEqualTo(2);
        ResponseEntity<String> renamedRetry = send(renamedKeepingOperation, "/merchants", key, BODY);
        assertThat(renamedRetry.getBody()).as("the operation's record, not the renamed route's")
                .isEqualTo(first.getBody());
    }

    /** A change made at run time: the route's definition replaced and the routes refreshed, no restart. */
    @Test
    void aRuleChangedAtRunTimeKeepsTheRecordsWrittenBeforeIt() throws Exception {
        define(shipped, Map.of("unordered-arrays", SHIPPED_ARRAYS));
        String key = UUID.randomUUID().toString();
        ResponseEntity<String> first = send(shipped, "/refreshed/merchants", key, BODY);
        assertThat(first.getStatusCode().value()).isEqualTo(202);

        define(shipped, Map.of("unordered-arrays", SHIPPED_ARRAYS, "fingerprint-ignore", "/sentAt"));
        assertReplayOf(first, send(shipped, "/refreshed/merchants", key, BODY));
        // The new rule is in force: a record it wrote forgives a new sentAt.
        String newKey = UUID.randomUUID().toString();
        ResponseEntity<String> underNewRule = send(shipped, "/refreshed/merchants", newKey, BODY);
        assertReplayOf(underNewRule, send(shipped, "/refreshed/merchants", newKey,
                BODY.replace("10:00:00Z", "10:00:07Z")));
        assertThat(writesReceived("/refreshed/merchants")).isEqualTo(2);
    }

    /**
     * Two routes naming one operation share its records, whatever their ids and rules: a route split in two by a
     * predicate (here a header the web front end sends), the retry matching the other.
     */
    @Test
    void twoRoutesNamingOneOperationShareItsRecords() throws Exception {
        RouteDefinition web = route("web-merchants", "/shared/**", Map.of("operation", "shared-merchants",
                "unordered-arrays", SHIPPED_ARRAYS, "fingerprint-ignore", "/sentAt"));
        web.getPredicates().add(new PredicateDefinition("Header=X-Channel, web"));
        web.setOrder(0);
        List<FilterDefinition> webFilters = new ArrayList<>(web.getFilters());
        webFilters.add(new FilterDefinition("AddRequestHeader=X-Via-Route, web-merchants"));
        web.setFilters(webFilters);
        RouteDefinition api = route("api-merchants", "/shared/**", Map.of("operation", "shared-merchants"));
        api.setOrder(1);
        define(shipped, web, api);
        String key = UUID.randomUUID().toString();
        ResponseEntity<String> first = Gateways.client(shipped).post().uri("/shared/merchants")
                .header("Idempotency-Key", key).header("X-Channel", "web").header("Content-Type", "application/json")
                .bodyValue(BODY).exchangeToMono(r -> r.toEntity(String.class)).block(WAIT);

        assertReplayOf(first, send(shipped, "/shared/merchants", key, BODY));
        assertThat(writesReceived("/shared/merchants")).isEqualTo(1);
        assertThat(upstream.findAll(postRequestedFor(urlEqualTo("/shared/merchants"))).get(0)
                .getHeader("X-Via-Route")).as("the first write went through the web route").isEqualTo("web-merchants");
    }

    /** Saves the route {@code refreshed} with these args and waits for the gateway's routes to be rebuilt. */
    static void define(ConfigurableApplicationContext gateway, Map<String, String> args) throws Exception {
        define(gateway, route("refreshed", "/refreshed/**", args));
    }

    static RouteDefinition route(String id, String path, Map<String, String> args) {
        RouteDefinition route = new RouteDefinition();
        route.setId(id);
        route.setUri(URI.create("http://127.0.0.1:" + upstream.port()));
        route.setPredicates(new ArrayList<>(List.of(new PredicateDefinition("Path=" + path))));
        FilterDefinition filter = new FilterDefinition();
        filter.setName("Idempotency");
        filter.setArgs(new LinkedHashMap<>(args));
        route.setFilters(List.of(filter));
        return route;
    }

    /** Saves these routes and waits for the gateway's routes to be rebuilt. */
    static void define(ConfigurableApplicationContext gateway, RouteDefinition... routes) throws Exception {
        for (RouteDefinition route : routes) {
            gateway.getBean(RouteDefinitionWriter.class).save(Mono.just(route)).block(WAIT);
        }
        CompletableFuture<RefreshRoutesResultEvent> refreshed = new CompletableFuture<>();
        gateway.addApplicationListener((ApplicationListener<RefreshRoutesResultEvent>) refreshed::complete);
        gateway.publishEvent(new RefreshRoutesEvent(RollingChangeIntegrationTest.class));
        RefreshRoutesResultEvent result = refreshed.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(result.isSuccess()).as("routes refreshed").isTrue();
    }
}
