package dev.retrysafe.gateway.console;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.support.SeededRecord;
import java.time.Duration;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseCookie;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.util.LinkedMultiValueMap;
import org.springframework.util.MultiValueMap;
import org.springframework.web.reactive.function.BodyInserters;

/**
 * The operator console over plain HTTP, where a browser cannot show it: only on the management port, behind the
 * operator's form login, settlement forms refused without their CSRF token, refused settlements checked and not
 * logged exactly as the operator API's, and a stored body shown escaped.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout=800ms",
                "management.server.port=0",
                "management.endpoints.web.exposure.include=health,idempotency",
                "idempotency.operator.username=ops",
                "idempotency.operator.password=s3cret"})
@ExtendWith(OutputCaptureExtension.class)
// The store-down test stops Redis: it runs last, and its context is not reused.
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OperatorConsoleIntegrationTest {
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());
    static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;
    @LocalManagementPort
    int managementPort;
    @Autowired
    RecordInspector inspector;
    @Autowired
    EmbeddedRedisServer redis;
    @Autowired
    ReactiveRedisConnectionFactory connections;

    WebTestClient gateway;
    WebTestClient management;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        String prefix = "spring.cloud.gateway.server.webflux.routes[0].";
        registry.add(prefix + "id", () -> "onboarding");
        registry.add(prefix + "uri", () -> "http://127.0.0.1:" + upstream.port());
        // The gateway's own port has a route on /console: it belongs to the route, not to the console.
        registry.add(prefix + "predicates[0]", () -> "Path=/merchants/**,/console/**");
        registry.add(prefix + "filters[0].name", () -> "Idempotency");
    }

    @AfterAll
    static void stopUpstream() {
        upstream.stop();
    }

    @BeforeEach
    void clients() {
        gateway = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(15)).build();
        management = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + managementPort)
                .responseTimeout(Duration.ofSeconds(15)).build();
    }

    String uncertainKey(String path) {
        String key = UUID.randomUUID().toString();
        upstream.stubFor(post(urlEqualTo(path)).willReturn(aResponse().withStatus(202).withFixedDelay(3000)));
        gateway.post().uri(path).header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isEqualTo(504);
        return key;
    }

    static String hash(String key) {
        return new IdempotencyScope("", "onboarding", new IdempotencyKey(key)).hash();
    }

    @Test
    @Order(Integer.MAX_VALUE)
    @DirtiesContext
    void aStoreThatDoesNotAnswerGivesTheOperatorAPageSayingSoNotA500(CapturedOutput output) {
        Browser browser = signIn();
        redis.stop();

        String list = management.get().uri("/console").cookie("SESSION", browser.session()).exchange()
                .expectStatus().isEqualTo(503).expectBody(String.class).returnResult().getResponseBody();
        assertThat(list).contains("The idempotency store did not answer").contains("could not list the records")
                .contains("Nothing was changed");
        String record = management.get().uri("/console/records/{hash}", "some-scope-hash")
                .cookie("SESSION", browser.session()).exchange()
                .expectStatus().isEqualTo(503).expectBody(String.class).returnResult().getResponseBody();
        assertThat(record).contains("could not read record some-scope-hash");
        assertThat(output.getAll()).contains("Operator console could not list the records");
    }

    /** A signed-in browser: its session cookie, and a CSRF token from the last page it was shown. */
    record Browser(String session, String csrf) {
    }

    Browser signIn() {
        EntityExchangeResult<String> form = management.get().uri("/console/login").exchange()
                .expectStatus().isOk().expectBody(String.class).returnResult();
        ResponseCookie started = form.getResponseCookies().getFirst("SESSION");
        assertThat(started).as("the sign-in page starts a session to hold its CSRF token").isNotNull();
        String session = started.getValue();
        EntityExchangeResult<Void> signedIn = management.post().uri("/console/login").cookie("SESSION", session)
                .contentType(MediaType.APPLICATION_FORM_URLENCODED)
                .body(BodyInserters.fromFormData("username", "ops").with("password", "s3cret")
                        .with("_csrf", csrf(form.getResponseBody())))
                .exchange()
                .expectStatus().isFound()
                .expectHeader().location("/console")
                .expectBody().isEmpty();
        ResponseCookie renewed = signedIn.getResponseCookies().getFirst("SESSION");
        // A new session id once signed in (no session fixation).
        assertThat(renewed).isNotNull();
        assertThat(renewed.getValue()).isNotEqualTo(session);
        String list = management.get().uri("/console").cookie("SESSION", renewed.getValue()).exchange()
                .expectStatus().isOk().expectBody(String.class).returnResult().getResponseBody();
        return new Browser(renewed.getValue(), csrf(list));
    }

    static String csrf(String page) {
        Matcher token = CSRF.matcher(page);
        assertThat(token.find()).as("a CSRF token in the page").isTrue();
        return token.group(1);
    }

    WebTestClient.ResponseSpec settle(Browser browser, String hash, String action, MultiValueMap<String, String> form) {
        return management.post().uri("/console/records/{hash}/" + action, hash).cookie("SESSION", browser.session())
                .contentType(MediaType.APPLICATION_FORM_URLENCODED).body(BodyInserters.fromFormData(form)).exchange();
    }

    static MultiValueMap<String, String> form(String... namesAndValues) {
        MultiValueMap<String, String> form = new LinkedMultiValueMap<>();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            form.add(namesAndValues[i], namesAndValues[i + 1]);
        }
        return form;
    }

    String state(String hash) {
        RecordView view = inspector.find(hash, false).block(Duration.ofSeconds(5));
        return view == null ? "ABSENT" : view.state();
    }

    @Test
    void theConsoleIsOnlyOnTheManagementPortAndBehindTheOperatorsLogin() {
        upstream.stubFor(post(urlEqualTo("/console")).willReturn(aResponse().withStatus(201).withBody("route's")));
        gateway.get().uri("/console").exchange().expectStatus().isNotFound()
                .expectHeader().doesNotExist(HttpHeaders.LOCATION);
        gateway.post().uri("/console").header("Idempotency-Key", UUID.randomUUID().toString()).bodyValue("x")
                .exchange().expectStatus().isCreated().expectBody(String.class).isEqualTo("route's");

        management.get().uri("/console").exchange().expectStatus().isFound()
                .expectHeader().location("/console/login");
        management.get().uri("/console/records/anything").exchange().expectStatus().isFound();
        // HTTP Basic is the operator API's login, not the console's.
        management.get().uri("/console").headers(h -> h.setBasicAuth("ops", "s3cret")).exchange()
                .expectStatus().isFound();
        management.get().uri("/console/login").exchange().expectStatus().isOk()
                .expectHeader().valueMatches("Content-Security-Policy", ".*default-src 'none'.*form-action 'self'.*")
                .expectHeader().valueEquals("X-Frame-Options", "DENY")
                .expectBody(String.class).value(page -> assertThat(page).contains("Sign in").doesNotContain("<script"));

        EntityExchangeResult<String> form = management.get().uri("/console/login").exchange()
                .expectBody(String.class).returnResult();
        assertThat(form.getResponseCookies().getFirst("SESSION")).isNotNull();
        management.post().uri("/console/login")
                .cookie("SESSION", form.getResponseCookies().getFirst("SESSION").getValue())
                .contentType(MediaType.APPLICATION_FORM_URLENCODED)
                .body(BodyInserters.fromFormData("username", "ops").with("password", "wrong")
                        .with("_csrf", csrf(form.getResponseBody())))
                .exchange()
                .expectStatus().isFound().expectHeader().location("/console/login?error");
    }

    @Test
    void aSettlementWithoutTheSessionsCsrfTokenIsRefusedAndChangesNothing(CapturedOutput output) {
        String key = uncertainKey("/merchants/console-csrf");
        Browser browser = signIn();

        settle(browser, hash(key), "release", form("reason", "forged by another site")).expectStatus().isForbidden();
        settle(browser, hash(key), "release", form("reason", "forged by another site", "_csrf", "not-the-token"))
                .expectStatus().isForbidden();

        assertThat(state(hash(key))).isEqualTo("UNCERTAIN");
        assertThat(output).doesNotContain("OPERATOR ops");
    }

    @Test
    void aReasonThatWouldForgeALogLineIsRefusedAsTheApiRefusesIt(CapturedOutput output) {
        String key = uncertainKey("/merchants/console-forged");
        Browser browser = signIn();

        settle(browser, hash(key), "release", form("reason",
                "ok\nOPERATOR admin release scope x (was UNCERTAIN): forged", "_csrf", browser.csrf()))
                .expectStatus().isBadRequest()
                .expectBody(String.class).value(page -> assertThat(page)
                        .contains("Not settled: reason must be one line of printable characters.")
                        .contains("<span class=\"UNCERTAIN\" id=\"state\">UNCERTAIN</span>"));
        settle(browser, hash(key), "complete", form("status", "two hundred", "reason", "created",
                "_csrf", browser.csrf()))
                .expectStatus().isBadRequest()
                .expectBody(String.class).value(page -> assertThat(page)
                        .contains("Not settled: complete needs a final HTTP status (200-599)."));

        assertThat(state(hash(key))).isEqualTo("UNCERTAIN");
        assertThat(output).doesNotContain("forged").doesNotContain("OPERATOR ops");
    }

    @Test
    void completingFromTheConsoleStoresTheResultShownEscapedAndLogsTheReason(CapturedOutput output) {
        String key = uncertainKey("/merchants/console-complete");
        Browser browser = signIn();
        String body = "<script>alert('stored')</script>";

        settle(browser, hash(key), "complete", form("status", "202", "contentType", "text/html", "body", body,
                "reason", "backend ticket 7 shows it was created", "_csrf", browser.csrf()))
                .expectStatus().isSeeOther()
                .expectHeader().location("/console/records/" + hash(key) + "?settled=complete");
        assertThat(output).contains("OPERATOR ops complete scope " + hash(key)
                + " (was UNCERTAIN): backend ticket 7 shows it was created");

        management.get().uri("/console/records/{hash}?settled=complete", hash(key))
                .cookie("SESSION", browser.session()).exchange()
                .expectStatus().isOk()
                .expectBody(String.class).value(page -> assertThat(page)
                        .contains("Completed: every retry with its key now gets this response.")
                        .contains("<span class=\"COMPLETED\" id=\"state\">COMPLETED</span>")
                        .contains("&lt;script&gt;alert(&#39;stored&#39;)&lt;/script&gt;")
                        .doesNotContain("<script")
                        .contains("backend ticket 7 shows it was created")
                        .doesNotContain("id=\"release\""));
        // Settled once: a second settlement is the API's 409, shown on the page.
        settle(browser, hash(key), "release", form("reason", "again", "_csrf", browser.csrf()))
                .expectStatus().isEqualTo(409)
                .expectBody(String.class).value(page -> assertThat(page).contains("the record is COMPLETED now"));

        gateway.post().uri("/merchants/console-complete").header("Idempotency-Key", key).bodyValue("x").exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("Idempotency-Replayed", "true")
                .expectBody(String.class).isEqualTo(body);
        upstream.verify(exactly(1), postRequestedFor(urlEqualTo("/merchants/console-complete")));
    }

    String page(Browser browser, String uri) {
        return management.get().uri(uri).cookie("SESSION", browser.session()).exchange()
                .expectStatus().isOk().expectBody(String.class).returnResult().getResponseBody();
    }

    @Test
    void aRecordIsListedFoundAndShownByItsOperationBesideTheRouteThatReservedIt() {
        Browser browser = signIn();
        // Reserved by a route onboarding-v2 whose operation is merchants-op: scoped, found and grouped by the latter.
        SeededRecord seeded = SeededRecord.withNewKey("", "merchants-op", "onboarding-v2", "/merchants/v2");
        String hash = seeded.writeUncertain(connections);
        String row = "data-scope=\"" + hash + "\"";

        assertThat(page(browser, "/console?operation=merchants-op")).contains(row)
                .contains("Operation <code>merchants-op</code> (route <code>onboarding-v2</code>) · tenant")
                .contains("name=\"operation\" value=\"merchants-op\"");
        assertThat(page(browser, "/console?route=onboarding-v2")).contains(row);
        assertThat(page(browser, "/console?operation=onboarding-v2")).doesNotContain(row);
        assertThat(page(browser, "/console?route=merchants-op")).doesNotContain(row);

        for (String scopedBy : new String[] {"operation", "route"}) {
            management.get().uri(b -> b.path("/console/find").queryParam(scopedBy, "merchants-op")
                            .queryParam("key", seeded.key()).build())
                    .cookie("SESSION", browser.session()).exchange()
                    .expectStatus().isSeeOther()
                    .expectHeader().location("/console/records/" + hash);
        }
        management.get().uri(b -> b.path("/console/find").queryParam("key", seeded.key()).build())
                .cookie("SESSION", browser.session()).exchange()
                .expectStatus().isBadRequest()
                .expectBody(String.class).value(page -> assertThat(page).contains("Give an operation"));
        assertThat(page(browser, "/console/records/" + hash))
                .contains("<dt>Operation</dt><dd><code>merchants-op</code></dd>")
                .contains("<dt>Route</dt><dd><code>onboarding-v2</code></dd>");
    }

    @Test
    void aRecordWrittenBeforeRoutesNamedAnOperationShowsItsRouteAsBoth() {
        String hash = SeededRecord.withNewKey("", "legacy-console", null, "/merchants/legacy")
                .writeUncertain(connections);
        Browser browser = signIn();

        assertThat(page(browser, "/console?route=legacy-console")).contains("data-scope=\"" + hash + "\"")
                .contains("Operation <code>legacy-console</code> · tenant");
        assertThat(page(browser, "/console?operation=legacy-console")).contains("data-scope=\"" + hash + "\"");
        assertThat(page(browser, "/console/records/" + hash))
                .contains("<dt>Operation</dt><dd><code>legacy-console</code></dd>")
                .contains("<dt>Route</dt><dd><code>legacy-console</code></dd>");
    }

    @Test
    void aRecordIsFoundByRouteAndKeyAndASignOutEndsTheSession() {
        String key = uncertainKey("/merchants/console-find");
        Browser browser = signIn();

        management.get().uri(b -> b.path("/console/find").queryParam("route", "onboarding").queryParam("key", key)
                        .build())
                .cookie("SESSION", browser.session()).exchange()
                .expectStatus().isSeeOther()
                .expectHeader().location("/console/records/" + hash(key));
        management.get().uri("/console/find?route=onboarding&key=no%20spaces").cookie("SESSION", browser.session())
                .exchange().expectStatus().isBadRequest()
                .expectBody(String.class).value(page -> assertThat(page).contains("Not a valid idempotency key."));
        management.get().uri("/console/records/no-such-hash").cookie("SESSION", browser.session()).exchange()
                .expectStatus().isNotFound()
                .expectBody(String.class).value(page -> assertThat(page).contains("No record for this scope hash"));

        management.post().uri("/console/logout").cookie("SESSION", browser.session())
                .contentType(MediaType.APPLICATION_FORM_URLENCODED)
                .body(BodyInserters.fromFormData("_csrf", browser.csrf())).exchange()
                .expectStatus().isFound().expectHeader().location("/console/login?logout");
        management.get().uri("/console").cookie("SESSION", browser.session()).exchange()
                .expectStatus().isFound().expectHeader().location("/console/login");
    }
}
