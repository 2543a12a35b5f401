package dev.retrysafe.gateway.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.console.ConsolePages.Csrf;
import dev.retrysafe.gateway.console.ConsolePages.ListFilter;
import dev.retrysafe.gateway.console.ConsolePages.Session;
import dev.retrysafe.gateway.console.ConsolePages.SettleForm;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The pages' HTML: everything that is not a literal of the page is escaped; the pages carry no script at all. */
class ConsolePagesTest {
    static final Instant NOW = Instant.parse("2026-03-01T10:00:00Z");
    static final String SCRIPT = "<script>alert(1)</script>";
    static final String SCRIPT_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;";
    static final Session SESSION = new Session("ops<b>", Optional.of(new Csrf("_csrf", "tok\"en")));

    static RecordView record(String scopeHash, String route, String state, RecordView.StoredBody response) {
        return new RecordView(scopeHash, route, "tenant<i>hash", state, "f".repeat(64), "POST",
                "/merchants/<img src=x onerror=alert(2)>", "http://upstream\"><script>x</script>", 2,
                NOW.minus(Duration.ofMinutes(4).plusSeconds(10)).toString(), null, null, null,
                NOW.minusSeconds(200).toString(), "timed out <b>after</b> 'sending'", null, null, null,
                "ops\"<script>", "ticket <42>", 3600L, response);
    }

    @Test
    void aStoredRouteRequestAndReasonAreEscapedInTheList() {
        String html = ConsolePages.list("/console", SESSION, new ListFilter("", "", "", 60),
                List.of(record("abc", "route" + SCRIPT, "UNCERTAIN", null)), 200, NOW, Optional.empty());

        assertThat(html).doesNotContain("<script").doesNotContain("<img").doesNotContain("<b>after")
                .doesNotContain("<i>hash")
                .contains("route" + SCRIPT_ESCAPED)
                .contains("POST /merchants/&lt;img src=x onerror=alert(2)&gt;")
                .contains("timed out &lt;b&gt;after&lt;/b&gt; &#39;sending&#39;")
                .contains("Signed in as <strong id=\"user\">ops&lt;b&gt;</strong>")
                .contains("4 min 10 s");
    }

    @Test
    void aStoredBodyAndHeadersAreEscapedOnTheRecordPage() {
        RecordView.StoredBody body = new RecordView.StoredBody(202,
                List.of(List.of("Content-Type", "text/html\"><script>x</script>")), "{\"name\":\"" + SCRIPT + "\"}",
                null, false, null);
        String html = ConsolePages.detail("/console", SESSION, "abc", record("abc", SCRIPT, "COMPLETED", body), NOW,
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
        String html = ConsolePages.detail("/console", SESSION, hash, record(hash, "onboarding", "UNCERTAIN", null),
                NOW, Optional.empty(), SettleForm.EMPTY);

        assertThat(html).doesNotContain("<script")
                .contains("action=\"/console/records/x%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E%2F../release\"")
                .contains("<h1>Record <code>x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;/..</code></h1>");
    }

    @Test
    void whatTheOperatorTypedComesBackEscapedWhenASettlementIsRefused() {
        SettleForm typed = new SettleForm("complete", "line\" onfocus=\"alert(1)", "202",
                "text/plain\"><script>", "</textarea>" + SCRIPT);
        String html = ConsolePages.detail("/console", SESSION, "abc", record("abc", "onboarding", "UNCERTAIN", null),
                NOW, Optional.of(new ConsolePages.Notice(true, "Not settled: " + SCRIPT)), typed);

        assertThat(html).doesNotContain("<script").doesNotContain("onfocus=\"alert")
                .contains("<textarea name=\"body\">&lt;/textarea&gt;" + SCRIPT_ESCAPED + "</textarea>")
                .contains("value=\"line&quot; onfocus=&quot;alert(1)\"")
                .contains("Not settled: " + SCRIPT_ESCAPED);
    }

    @Test
    void filterValuesAreEscapedInTheirInputs() {
        String html = ConsolePages.list("/console", SESSION, new ListFilter("\"><script>", "header:'x'", "", 60),
                List.of(), 200, NOW, Optional.empty());

        assertThat(html).doesNotContain("<script")
                .contains("name=\"route\" value=\"&quot;&gt;&lt;script&gt;\"")
                .contains("name=\"tenant\" value=\"header:&#39;x&#39;\"");
    }

    @Test
    void everyPostFormCarriesTheCsrfTokenAndNoPageHasAScript() {
        String detail = ConsolePages.detail("/console", SESSION, "abc",
                record("abc", "onboarding", "UNCERTAIN", null), NOW, Optional.empty(), SettleForm.EMPTY);
        String login = ConsolePages.login("/console", SESSION.csrf(), true, false);
        String field = "<input type=\"hidden\" name=\"_csrf\" value=\"tok&quot;en\">";

        // release, complete, sign out
        assertThat(detail.split("method=\"post\"", -1)).hasSize(4);
        assertThat(detail.split(java.util.regex.Pattern.quote(field), -1)).hasSize(4);
        assertThat(login).contains(field).contains("Wrong user name or password.");
        for (String page : List.of(detail, login)) {
            assertThat(page.toLowerCase(java.util.Locale.ROOT)).doesNotContain("<script").doesNotContain("onclick")
                    .doesNotContain("javascript:");
        }
    }

    @Test
    void escapeCoversTheFiveHtmlCharacters() {
        assertThat(Html.esc("<a href=\"x\" title='y'>&</a>"))
                .isEqualTo("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
        assertThat(Html.esc(null)).isEmpty();
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
