package dev.retrysafe.gateway.console;

import static org.assertj.core.api.Assertions.assertThat;

import com.samskivert.mustache.Mustache;
import dev.retrysafe.gateway.console.ConsolePages.Csrf;
import dev.retrysafe.gateway.console.ConsolePages.ListFilter;
import dev.retrysafe.gateway.console.ConsolePages.Notice;
import dev.retrysafe.gateway.console.ConsolePages.Session;
import dev.retrysafe.gateway.console.ConsolePages.SettleForm;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;

/**
 * The pages as their templates render them: every value that is not a literal of the page comes out escaped, no
 * template can write one unescaped, and the pages carry no script at all.
 */
class ConsolePagesTest {
    static final ConsolePages PAGES = new ConsolePages(ConsolePages.compiler());
    static final Instant NOW = Instant.parse("2026-03-01T10:00:00Z");
    static final String SCRIPT = "<script>alert(1)</script>";
    static final String SCRIPT_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;";
    static final Session SESSION = new Session("ops<b>", Optional.of(new Csrf("_csrf", "tok\"en")));

    static RecordView record(String scopeHash, String route, String state, RecordView.StoredBody response) {
        return record(scopeHash, route, route, state, response);
    }

    static RecordView record(String scopeHash, String route, String operation, String state,
            RecordView.StoredBody response) {
        return new RecordView(scopeHash, route, operation, "tenant<i>hash", state, "f".repeat(64), "POST",
                "/merchants/<img src=x onerror=alert(2)>", "http://upstream\"><script>x</script>", 2,
                NOW.minus(Duration.ofMinutes(4).plusSeconds(10)).toString(), null, null, null,
                NOW.minusSeconds(200).toString(), "timed out <b>after</b> 'sending'", null, null, null,
                "ops\"<script>", "ticket <42>", 3600L, response);
    }

    @Test
    void aStoredRouteRequestAndReasonAreEscapedInTheList() {
        String html = PAGES.list("/console", SESSION, new ListFilter("", "", "", "", 60),
                List.of(record("abc", "route" + SCRIPT, "UNCERTAIN", null)), 200, NOW, Optional.empty());

        assertThat(html).doesNotContain("<script").doesNotContain("<img").doesNotContain("<b>after")
                .doesNotContain("<i>hash")
                .contains("route" + SCRIPT_ESCAPED)
                .contains("POST /merchants/&lt;img src&#x3D;x onerror&#x3D;alert(2)&gt;")
                .contains("timed out &lt;b&gt;after&lt;/b&gt; &#39;sending&#39;")
                .contains("Signed in as <strong id=\"user\">ops&lt;b&gt;</strong>")
                .contains("4 min 10 s");
    }

    @Test
    void recordsAreGroupedByOperationAndTenantNamingTheRoutesThatReservedThemWhenTheyAreNotTheOperation() {
        String html = PAGES.list("/console", SESSION, new ListFilter("", "", "", "", 60), List.of(
                        record("a", "onboarding-v2", "merchants-op", "UNCERTAIN", null),
                        record("b", "onboarding", "onboarding", "UNCERTAIN", null),
                        record("c", "onboarding-v3", "merchants-op", "UNCERTAIN", null)),
                200, NOW, Optional.empty());

        assertThat(html).contains("Operation <code>merchants-op</code> (routes <code>onboarding-v2</code>, "
                        + "<code>onboarding-v3</code>) · tenant")
                .contains("Operation <code>onboarding</code> · tenant")
                .doesNotContain("(route <code>onboarding</code>)")
                .contains("2 records").contains("1 record<");
        assertThat(html.indexOf("data-scope=\"c\"")).isLessThan(html.indexOf("data-scope=\"b\""));

        String oneRoute = PAGES.list("/console", SESSION, new ListFilter("", "merchants-op", "", "", 60),
                List.of(record("a", "onboarding-v2", "merchants-op", "UNCERTAIN", null)), 200, NOW, Optional.empty());
        assertThat(oneRoute).contains("Operation <code>merchants-op</code> (route <code>onboarding-v2</code>) · tenant")
                .contains("name=\"operation\" value=\"merchants-op\"");
    }

    @Test
    void theRecordPageShowsTheOperationThatScopesTheRecordAndTheRouteThatReservedIt() {
        String html = PAGES.detail("/console", SESSION, "a",
                record("a", "onboarding-v2", "merchants-op", "UNCERTAIN", null), NOW, Optional.empty(),
                SettleForm.EMPTY);

        assertThat(html).contains("<dt>Operation</dt><dd><code>merchants-op</code></dd>")
                .contains("<dt>Route</dt><dd><code>onboarding-v2</code></dd>");
    }

    @Test
    void aStoredBodyAndHeadersAreEscapedOnTheRecordPage() {
        RecordView.StoredBody body = new RecordView.StoredBody(202,
                List.of(List.of("Content-Type", "text/html\"><script>x</script>")), "{\"name\":\"" + SCRIPT + "\"}",
                null, false, null);
        String html = PAGES.detail("/console", SESSION, "abc", record("abc", SCRIPT, "COMPLETED", body), NOW,
                Optional.empty(), SettleForm.EMPTY);

        assertThat(html).doesNotContain("<script").doesNotContain("<img")
                .contains("<pre id=\"body\">{&quot;name&quot;:&quot;" + SCRIPT_ESCAPED + "&quot;}</pre>")
                .contains("text/html&quot;&gt;&lt;script&gt;x&lt;/script&gt;")
                .contains("<code>" + SCRIPT_ESCAPED + "</code>")
                .contains("ops&quot;&lt;script&gt;")
                .contains("ticket &lt;42&gt;")
                // Settled already: no settlement forms.
                .doesNotContain("id=\"release\"");
    }

    @Test
    void aScopeHashFromTheUrlIsEscapedInTextAndPercentEncodedInLinks() {
        String hash = "x\"><script>alert(1)</script>/..";
        String html = PAGES.detail("/console", SESSION, hash, record(hash, "onboarding", "UNCERTAIN", null),
                NOW, Optional.empty(), SettleForm.EMPTY);

        assertThat(html).doesNotContain("<script")
                .contains("action=\"/console/records/x%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E%2F../release\"")
                .contains("<h1>Record <code>x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;/..</code></h1>");
    }

    @Test
    void whatTheOperatorTypedComesBackEscapedWhenASettlementIsRefused() {
        SettleForm typed = new SettleForm("complete", "line\" onfocus=\"alert(1)", "202",
                "text/plain\"><script>", "</textarea>" + SCRIPT);
        String html = PAGES.detail("/console", SESSION, "abc", record("abc", "onboarding", "UNCERTAIN", null),
                NOW, Optional.of(new Notice(true, "Not settled: " + SCRIPT)), typed);

        assertThat(html).doesNotContain("<script").doesNotContain("onfocus=\"alert")
                .contains("<textarea name=\"body\">&lt;/textarea&gt;" + SCRIPT_ESCAPED + "</textarea>")
                .contains("value=\"line&quot; onfocus&#x3D;&quot;alert(1)\"")
                .contains("Not settled: " + SCRIPT_ESCAPED);
    }

    @Test
    void filterValuesAreEscapedInTheirInputs() {
        String html = PAGES.list("/console", SESSION,
                new ListFilter("\"><script>", "op\"><script>", "header:'x'", "", 60),
                List.of(), 200, NOW, Optional.empty());

        assertThat(html).doesNotContain("<script")
                .contains("name=\"route\" value=\"&quot;&gt;&lt;script&gt;\"")
                .contains("name=\"operation\" value=\"op&quot;&gt;&lt;script&gt;\"")
                .contains("name=\"tenant\" value=\"header:&#39;x&#39;\"");
    }

    @Test
    void everyPostFormCarriesTheCsrfTokenAndNoPageHasAScript() {
        String detail = PAGES.detail("/console", SESSION, "abc",
                record("abc", "onboarding", "UNCERTAIN", null), NOW, Optional.empty(), SettleForm.EMPTY);
        String login = PAGES.login("/console", SESSION.csrf(), true, false);
        String field = "<input type=\"hidden\" name=\"_csrf\" value=\"tok&quot;en\">";

        // release, complete, sign out
        assertThat(detail.split("method=\"post\"", -1)).hasSize(4);
        assertThat(detail.split(Pattern.quote(field), -1)).hasSize(4);
        assertThat(login).contains(field).contains("Wrong user name or password.");
        for (String page : List.of(detail, login)) {
            assertThat(page.toLowerCase(Locale.ROOT)).doesNotContain("<script").doesNotContain("onclick")
                    .doesNotContain("javascript:");
        }
    }

    // ------------------------------------------------------------ every field, and the templates themselves

    /** Markup with quotes and an ampersand, named after the field that carries it. */
    static String hostile(String field) {
        return "<b id=" + field + ">\"'&";
    }

    /** {@link #hostile} as the templates must write it. */
    static String escaped(String field) {
        return "&lt;b id&#x3D;" + field + "&gt;&quot;&#39;&amp;";
    }

    /**
     * Every page, with hostile text in every field that reaches it from outside the console's code: stored record
     * fields, the stored response, the filter and the settlement forms as typed, the operator's name, the CSRF
     * token, the base path and notices. Keyed by the field's name.
     */
    static Map<String, String> pagesWithHostileFields(ConsolePages pages) {
        String tenant = hostile("tenant");
        Session session = new Session(hostile("user"), Optional.of(new Csrf(hostile("csrfName"), hostile("csrf"))));
        String base = "/console" + hostile("base");
        RecordView listed = new RecordView(hostile("scope"), hostile("route"), hostile("operation"),
                IdempotencyScope.tenantHash(tenant), "IN_FLIGHT", hostile("fingerprint"), hostile("method"),
                hostile("path"), hostile("upstream"), 1, hostile("reservedAt"), hostile("leaseUntil"), null, null, null,
                null, null, null, null, null, null, null, null);
        RecordView uncertain = new RecordView("s2", "r", "r", hostile("tenantHash"), "UNCERTAIN", "f", "POST", "/p",
                "u", 1, null, null, null, null, null, hostile("uncertainReason"), null, null, null, null, null, null,
                null);
        RecordView.StoredBody text = new RecordView.StoredBody(202,
                List.of(List.of(hostile("headerName"), hostile("headerValue"))), hostile("body"), null, false,
                hostile("unreadable"));
        RecordView everything = new RecordView(hostile("detailScope"), hostile("detailRoute"),
                hostile("detailOperation"), hostile("detailTenantHash"), hostile("state"), hostile("detailFingerprint"),
                hostile("detailMethod"), hostile("detailPath"), hostile("detailUpstream"), 1,
                hostile("detailReservedAt"), hostile("detailLeaseUntil"), hostile("completedAt"), 201,
                hostile("uncertainAt"), hostile("detailUncertainReason"), hostile("processId"),
                hostile("processState"), hostile("processStatus"), hostile("resolvedBy"), hostile("resolvedReason"),
                60L, text);
        RecordView notText = new RecordView("s3", "r", "r", "t", "COMPLETED", "f", null, null, "u", 1, null, null,
                null, 200, null, null, null, null, null, null, null, null,
                new RecordView.StoredBody(200, List.of(), null, hostile("bodyBase64"), false, null));
        RecordView open = new RecordView("s4", "r", "r", "t", "UNCERTAIN", "f", "POST", "/p", "u", 1, null, null,
                null, null, null, null, null, null, null, null, null, null, null);
        Optional<Notice> notice = Optional.of(new Notice(true, hostile("notice")));
        return Map.of(
                "list", pages.list(base, session,
                        new ListFilter(hostile("filterRoute"), hostile("filterOperation"), tenant, "", 60),
                        List.of(listed, uncertain), 200, NOW, notice),
                "record", pages.detail(base, session, hostile("urlScope"), everything, NOW, notice,
                        SettleForm.EMPTY),
                "not text", pages.detail(base, session, "s3", notText, NOW, Optional.empty(), SettleForm.EMPTY),
                "refused completion", pages.detail(base, session, "s4", open, NOW, notice, new SettleForm("complete",
                        hostile("completeReason"), hostile("status"), hostile("contentType"), hostile("typedBody"))),
                "refused release", pages.detail(base, session, "s4", open, NOW, notice, new SettleForm("release",
                        hostile("releaseReason"), "", "", "")),
                "missing", pages.detail(base, session, hostile("missingScope"), null, NOW, notice, SettleForm.EMPTY),
                "login", pages.login(base, session.csrf(), false, false));
    }

    static final Map<String, List<String>> FIELDS_BY_PAGE = Map.of(
            "list", List.of("user", "csrfName", "csrf", "base", "notice", "filterRoute", "filterOperation", "tenant",
                    "scope", "route", "operation", "fingerprint", "method", "path", "reservedAt", "leaseUntil",
                    "tenantHash", "uncertainReason"),
            "record", List.of("user", "csrf", "base", "notice", "urlScope", "detailRoute", "detailOperation",
                    "detailTenantHash", "state",
                    "detailFingerprint", "detailMethod", "detailPath", "detailUpstream", "detailReservedAt",
                    "detailLeaseUntil", "completedAt", "uncertainAt", "detailUncertainReason", "processId",
                    "processState", "processStatus", "resolvedBy", "resolvedReason", "headerName", "headerValue",
                    "body", "unreadable"),
            "not text", List.of("bodyBase64"),
            "refused completion", List.of("completeReason", "status", "contentType", "typedBody"),
            "refused release", List.of("releaseReason"),
            "missing", List.of("missingScope"),
            "login", List.of("csrfName", "csrf", "base"));

    @Test
    void everyFieldThatCarriesOutsideTextIsEscapedOnEveryPage() {
        Map<String, String> pages = pagesWithHostileFields(PAGES);

        assertThat(pages.keySet()).isEqualTo(FIELDS_BY_PAGE.keySet());
        pages.forEach((page, html) -> {
            assertThat(html).as(page).doesNotContain("<b id=");
            for (String field : FIELDS_BY_PAGE.get(page)) {
                assertThat(html).as(page + ": " + field).contains(escaped(field));
            }
        });
    }

    /** The check above is one that escaping switched off would fail: it does not pass for want of the fields. */
    @Test
    void withoutEscapingTheSamePagesWouldCarryTheMarkup() {
        Mustache.Compiler unescaped = ConsolePages.compiler().escapeHTML(false);
        Map<String, String> pages = pagesWithHostileFields(new ConsolePages(unescaped));

        pages.forEach((page, html) -> {
            for (String field : FIELDS_BY_PAGE.get(page)) {
                assertThat(html).as(page + ": " + field).doesNotContain(escaped(field));
            }
        });
        assertThat(pages.get("record")).contains(hostile("body"), hostile("headerValue"), hostile("resolvedBy"));
    }

    @Test
    void theCompilerEscapesEveryCharacterThatEndsTextOrAnAttribute() {
        String html = ConsolePages.compiler().compile("<p title=\"{{v}}\">{{v}}</p>")
                .execute(Map.of("v", "<a href=\"x\" title='y'>&</a>"));

        String text = "&lt;a href&#x3D;&quot;x&quot; title&#x3D;&#39;y&#39;&gt;&amp;&lt;/a&gt;";
        assertThat(html).isEqualTo("<p title=\"" + text + "\">" + text + "</p>");
    }

    /**
     * {@code {{{name}}}} and {@code {{&name}}} are Mustache's ways to write a value unescaped: no template has one,
     * nor changes the delimiters ({@code {{=<% %>=}}}), after which this check could not see them.
     */
    @Test
    void noTemplateWritesAValueUnescaped() throws IOException {
        Resource[] templates = new PathMatchingResourcePatternResolver()
                .getResources("classpath*:templates/console/*.mustache");

        assertThat(templates).extracting(Resource::getFilename)
                .contains("list.mustache", "record.mustache", "login.mustache", "head.mustache");
        for (Resource template : templates) {
            String text = template.getContentAsString(StandardCharsets.UTF_8);
            assertThat(text).as(template.getFilename()).doesNotContain("{{{").doesNotContainPattern("\\{\\{\\s*&")
                    .doesNotContain("<script").doesNotContain("{{=");
        }
    }

    @Test
    void agesAreWrittenInTheirTwoLargestUnits() {
        assertThat(ConsolePages.duration(Duration.ofSeconds(42))).isEqualTo("42 s");
        assertThat(ConsolePages.duration(Duration.ofSeconds(250))).isEqualTo("4 min 10 s");
        assertThat(ConsolePages.duration(Duration.ofMinutes(125))).isEqualTo("2 h 5 min");
        assertThat(ConsolePages.duration(Duration.ofHours(27))).isEqualTo("1 d 3 h");
        assertThat(ConsolePages.age("not a time", NOW)).isEmpty();
    }
}
