package dev.retrysafe.gateway.console;

import static dev.retrysafe.gateway.console.Html.esc;

import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The console's pages as HTML strings: plain markup, a little inline CSS, no script. Every value that is not a
 * literal of the page (stored fields, the stored body, request parameters, the operator's name) is escaped here,
 * through {@link Html}, and nowhere else.
 */
final class ConsolePages {
    static final String ANONYMOUS_TENANT_HASH = IdempotencyScope.tenantHash("");

    private static final String STYLE = """
            body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
            header{background:#24292f;color:#fff;padding:.5rem 1rem;display:flex;gap:1.25rem;align-items:center}
            header a,header button{color:#fff}header .who{margin-left:auto;opacity:.85}
            main{padding:1rem 1.25rem;max-width:1400px}
            h1{font-size:1.3rem;margin:.25rem 0 .75rem}h2{font-size:1.05rem;margin:1.25rem 0 .5rem}
            table{border-collapse:collapse;width:100%;background:#fff}
            th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
            thead th{background:#f0f3f6;white-space:nowrap}tr.group th{background:#ddf4ff;font-weight:600}
            td.num{text-align:right;white-space:nowrap}
            code,pre,input.mono,textarea{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
            pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#fff;border:1px solid #d0d7de;padding:.5rem;max-height:22rem;overflow:auto;margin:.25rem 0}
            .UNCERTAIN{color:#9a6700;font-weight:600}.IN_FLIGHT{color:#0969da;font-weight:600}.COMPLETED{color:#1a7f37;font-weight:600}
            .notice{padding:.5rem .75rem;border:1px solid #1a7f37;background:#dafbe1;margin:.5rem 0}
            .notice.error{border-color:#cf222e;background:#ffebe9}.muted{color:#59636e}
            form.bar{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end;background:#fff;border:1px solid #d0d7de;padding:.5rem .75rem;margin:.5rem 0}
            form.bar label,form.settle label{display:flex;flex-direction:column;font-size:12px;color:#59636e}
            form.inline{display:inline;margin:0}header form.inline button{background:none;border:1px solid #8c959f;border-radius:4px;cursor:pointer}
            .settle{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
            form.settle{background:#fff;border:1px solid #d0d7de;padding:.75rem;display:flex;flex-direction:column;gap:.5rem}
            form.settle textarea{min-height:6rem}input,textarea,select{padding:.25rem;border:1px solid #8c959f;border-radius:4px}
            button{padding:.3rem .8rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;background:#fff;border:1px solid #d0d7de;padding:.75rem;margin:0}
            dt{color:#59636e}dd{margin:0;overflow-wrap:anywhere}
            """;

    private ConsolePages() {
    }

    /** The token a form must send back (Spring Security's CSRF protection), when there is one. */
    record Csrf(String parameterName, String token) {
        String field() {
            return "<input type=\"hidden\" name=\"" + esc(parameterName) + "\" value=\"" + esc(token) + "\">";
        }
    }

    /** A message above the page's content; {@code error} for a refused settlement or lookup. */
    record Notice(boolean error, String text) {
        String html() {
            return "<p class=\"notice" + (error ? " error" : "") + "\" role=\"" + (error ? "alert" : "status") + "\">"
                    + esc(text) + "</p>";
        }
    }

    /** The list's filter as entered: raw tenant (hashed for the lookup), states, IN_FLIGHT age threshold. */
    record ListFilter(String route, String tenant, String state, long inFlightOlderThanSeconds) {
    }

    /** What the operator typed into a settlement form, shown again when it is refused. */
    record SettleForm(String action, String reason, String status, String contentType, String body) {
        static final SettleForm EMPTY = new SettleForm("", "", "", "application/json", "");
    }

    /** Who is signed in, and the token the sign-out form needs. */
    record Session(String user, Optional<Csrf> csrf) {
    }

    // ---------------------------------------------------------------- the list

    static String list(String base, Session session, ListFilter filter, List<RecordView> records, int limit,
            Instant now, Optional<Notice> notice) {
        StringBuilder html = new StringBuilder(8192);
        html.append(head("Records to look at", base, session));
        notice.ifPresent(n -> html.append(n.html()));
        html.append("<h1>UNCERTAIN and long IN_FLIGHT records</h1>");
        html.append("<p class=\"muted\">What the gateway could not settle by itself, by route and tenant. Open one to "
                + "see its stored response and to settle it after checking the backend.</p>");
        html.append(filterForm(base, filter));
        html.append(findForm(base));
        if (records.isEmpty()) {
            html.append("<p id=\"no-records\">No record matches: nothing to settle here.</p>");
        } else {
            html.append(table(base, filter, records, now));
            if (records.size() >= limit) {
                html.append("<p class=\"muted\">The first ").append(limit)
                        .append(" records only: narrow the list by route or tenant.</p>");
            }
        }
        return html.append(foot()).toString();
    }

    private static String filterForm(String base, ListFilter filter) {
        return "<form class=\"bar\" method=\"get\" action=\"" + esc(base) + "\" aria-label=\"Filter\">"
                + "<label>Route<input name=\"route\" value=\"" + esc(filter.route()) + "\" size=\"18\"></label>"
                + "<label>Tenant (as resolved)<input name=\"tenant\" value=\"" + esc(filter.tenant())
                + "\" placeholder=\"header:acme\" size=\"22\"></label>"
                + "<label>State<select name=\"state\">"
                + option("", "UNCERTAIN and long IN_FLIGHT", filter.state())
                + option("UNCERTAIN", "UNCERTAIN", filter.state())
                + option("IN_FLIGHT", "IN_FLIGHT", filter.state())
                + "</select></label>"
                + "<label>IN_FLIGHT longer than (s)<input name=\"inFlightOlderThanSeconds\" type=\"number\" min=\"0\" "
                + "value=\"" + filter.inFlightOlderThanSeconds() + "\" size=\"6\"></label>"
                + "<button type=\"submit\">Show</button></form>";
    }

    private static String findForm(String base) {
        return "<form class=\"bar\" method=\"get\" action=\"" + esc(base) + "/find\" aria-label=\"Find one record\">"
                + "<label>Route<input name=\"route\" size=\"18\"></label>"
                + "<label>Tenant (as resolved)<input name=\"tenant\" placeholder=\"header:acme\" size=\"22\"></label>"
                + "<label>Idempotency-Key<input name=\"key\" class=\"mono\" size=\"30\"></label>"
                + "<span class=\"muted\">or</span>"
                + "<label>Scope hash (from a log line)<input name=\"scopeHash\" class=\"mono\" size=\"30\"></label>"
                + "<button type=\"submit\">Open record</button></form>";
    }

    private static String option(String value, String label, String selected) {
        return "<option value=\"" + esc(value) + "\"" + (value.equals(selected) ? " selected" : "") + ">" + esc(label)
                + "</option>";
    }

    private static String table(String base, ListFilter filter, List<RecordView> records, Instant now) {
        Map<String, List<RecordView>> groups = new LinkedHashMap<>();
        records.stream()
                .sorted(Comparator.comparing((RecordView v) -> nullToEmpty(v.route()))
                        .thenComparing(v -> nullToEmpty(v.tenantHash()))
                        .thenComparing(v -> nullToEmpty(v.reservedAt())))
                .forEach(v -> groups.computeIfAbsent(nullToEmpty(v.route()) + "\n" + nullToEmpty(v.tenantHash()),
                        k -> new java.util.ArrayList<>()).add(v));
        StringBuilder html = new StringBuilder(4096);
        html.append("<table id=\"records\"><thead><tr><th>State</th><th>Age</th><th>Attempts</th><th>Request</th>"
                + "<th>Fingerprint</th><th>Why</th><th>Scope hash</th></tr></thead>");
        for (List<RecordView> group : groups.values()) {
            RecordView first = group.get(0);
            html.append("<tbody><tr class=\"group\"><th colspan=\"7\">Route <code>").append(esc(first.route()))
                    .append("</code> · tenant ").append(tenantLabel(first.tenantHash(), filter.tenant()))
                    .append(" · ").append(group.size()).append(group.size() == 1 ? " record" : " records")
                    .append("</th></tr>");
            for (RecordView v : group) {
                html.append("<tr class=\"record\" data-scope=\"").append(esc(v.scopeHash())).append("\">")
                        .append("<td class=\"").append(esc(v.state())).append("\">").append(esc(v.state()))
                        .append("</td>")
                        .append("<td class=\"num\" title=\"reserved at ").append(esc(v.reservedAt())).append("\">")
                        .append(esc(age(v.reservedAt(), now))).append("</td>")
                        .append("<td class=\"num\">").append(v.attempts() == null ? "" : v.attempts()).append("</td>")
                        .append("<td>").append(request(v)).append("</td>")
                        .append("<td><code title=\"").append(esc(v.fingerprint())).append("\">")
                        .append(esc(shorten(v.fingerprint(), 12))).append("</code></td>")
                        .append("<td>").append(esc(why(v))).append("</td>")
                        .append("<td><a href=\"").append(esc(base)).append("/records/")
                        .append(Html.segment(v.scopeHash())).append("\"><code>")
                        .append(esc(shorten(v.scopeHash(), 16))).append("</code></a></td></tr>");
            }
            html.append("</tbody>");
        }
        return html.append("</table>").toString();
    }

    private static String tenantLabel(@Nullable String tenantHash, String enteredTenant) {
        if (ANONYMOUS_TENANT_HASH.equals(tenantHash)) {
            return "<em>anonymous</em>";
        }
        String hash = "<code title=\"tenant hash " + esc(tenantHash) + "\">" + esc(shorten(tenantHash, 12)) + "</code>";
        if (!enteredTenant.isBlank() && IdempotencyScope.tenantHash(enteredTenant).equals(tenantHash)) {
            return "<code>" + esc(enteredTenant) + "</code> (" + hash + ")";
        }
        return hash;
    }

    private static String request(RecordView v) {
        if (v.method() == null && v.path() == null) {
            return "<span class=\"muted\">not recorded</span>";
        }
        return "<code>" + esc(nullToEmpty(v.method())) + " " + esc(nullToEmpty(v.path())) + "</code>";
    }

    private static String why(RecordView v) {
        if ("IN_FLIGHT".equals(v.state())) {
            return v.leaseUntil() == null ? "in flight" : "in flight, lease until " + v.leaseUntil();
        }
        return nullToEmpty(v.uncertainReason());
    }

    // ---------------------------------------------------------------- one record

    static String detail(String base, Session session, String scopeHash, @Nullable RecordView view, Instant now,
            Optional<Notice> notice, SettleForm form) {
        StringBuilder html = new StringBuilder(8192);
        html.append(head("Record " + shorten(scopeHash, 16), base, session));
        notice.ifPresent(n -> html.append(n.html()));
        html.append("<h1>Record <code>").append(esc(scopeHash)).append("</code></h1>");
        if (view == null) {
            html.append("<p id=\"no-record\">No record for this scope hash: it was released, its retention ended, or "
                    + "it never existed.</p><p><a href=\"").append(esc(base)).append("\">Back to the list</a></p>");
            return html.append(foot()).toString();
        }
        html.append("<dl id=\"record\">");
        field(html, "State", "<span class=\"" + esc(view.state()) + "\" id=\"state\">" + esc(view.state()) + "</span>");
        field(html, "Route", code(view.route()));
        field(html, "Tenant", ANONYMOUS_TENANT_HASH.equals(view.tenantHash()) ? "<em>anonymous</em>"
                : code(view.tenantHash()) + " <span class=\"muted\">(a hash: the tenant is not stored)</span>");
        field(html, "Request", request(view));
        field(html, "Fingerprint", code(view.fingerprint()));
        field(html, "Upstream", code(view.upstream()));
        field(html, "Attempts", view.attempts() == null ? "" : view.attempts().toString());
        field(html, "Reserved at", time(view.reservedAt(), now));
        optional(html, "Lease until", view.leaseUntil(), v -> esc(v));
        optional(html, "Uncertain since", view.uncertainAt(), v -> time(v, now));
        optional(html, "Why uncertain", view.uncertainReason(), Html::esc);
        optional(html, "Completed at", view.completedAt(), v -> time(v, now));
        optional(html, "Status", view.status() == null ? null : view.status().toString(), Html::esc);
        optional(html, "Process", view.processId() == null ? null : view.processId() + " "
                + nullToEmpty(view.processState()) + " " + nullToEmpty(view.processStatus()), Html::esc);
        optional(html, "Settled by", view.resolvedBy(), Html::esc);
        optional(html, "Settlement reason", view.resolvedReason(), Html::esc);
        optional(html, "Expires in", view.expiresInSeconds() == null ? null
                : duration(Duration.ofSeconds(view.expiresInSeconds())), Html::esc);
        html.append("</dl>");
        html.append(storedResponse(view.response()));
        if ("IN_FLIGHT".equals(view.state()) || "UNCERTAIN".equals(view.state())) {
            html.append(settleForms(base, session, view, form));
        }
        html.append("<p><a href=\"").append(esc(base)).append("\">Back to the list</a></p>");
        return html.append(foot()).toString();
    }

    private static String storedResponse(RecordView.@Nullable StoredBody response) {
        StringBuilder html = new StringBuilder("<h2>Stored response</h2>");
        if (response == null) {
            return html.append("<p class=\"muted\" id=\"no-response\">None: nothing was stored for this record.</p>")
                    .toString();
        }
        html.append("<div id=\"response\"><p>Status <strong>").append(response.status()).append("</strong></p>");
        if (response.unreadable() != null) {
            html.append("<p class=\"notice error\">Cannot be opened: ").append(esc(response.unreadable()))
                    .append("</p>");
        }
        if (response.headers() != null && !response.headers().isEmpty()) {
            html.append("<table><thead><tr><th>Header</th><th>Value</th></tr></thead><tbody>");
            for (List<String> header : response.headers()) {
                html.append("<tr><td><code>").append(esc(header.get(0))).append("</code></td><td><code>")
                        .append(esc(header.size() > 1 ? header.get(1) : "")).append("</code></td></tr>");
            }
            html.append("</tbody></table>");
        }
        if (response.body() != null) {
            html.append("<pre id=\"body\">").append(esc(response.body())).append("</pre>");
        } else if (response.bodyBase64() != null) {
            html.append("<p class=\"muted\">Not UTF-8 text; base64:</p><pre id=\"body\">")
                    .append(esc(response.bodyBase64())).append("</pre>");
        }
        if (response.bodyOmitted()) {
            html.append("<p class=\"muted\">The body was too large to store: a replay says so.</p>");
        }
        return html.append("</div>").toString();
    }

    private static String settleForms(String base, Session session, RecordView view, SettleForm form) {
        String action = esc(base) + "/records/" + Html.segment(view.scopeHash());
        String csrf = session.csrf().map(Csrf::field).orElse("");
        boolean releaseAgain = "release".equals(form.action());
        boolean completeAgain = "complete".equals(form.action());
        StringBuilder html = new StringBuilder("<h2>Settle</h2>");
        html.append("<p class=\"muted\">Check the backend first. Both are written to the gateway's log with your name "
                + "and the reason.</p>");
        if ("IN_FLIGHT".equals(view.state())) {
            html.append("<p class=\"notice error\">This request may still be on its way to the upstream: releasing it "
                    + "now can let a retry act a second time.</p>");
        }
        html.append("<div class=\"settle\">");
        html.append("<form class=\"settle\" id=\"release\" method=\"post\" action=\"").append(action)
                .append("/release\">").append(csrf)
                .append("<strong>Release</strong><span class=\"muted\">The backend did not act on it: free the key, so "
                        + "that the client's next retry is forwarded.</span>")
                .append("<label>Reason (one line, logged)<input name=\"reason\" required maxlength=\"500\" value=\"")
                .append(releaseAgain ? esc(form.reason()) : "").append("\"></label>")
                .append("<button type=\"submit\">Release</button></form>");
        html.append("<form class=\"settle\" id=\"complete\" method=\"post\" action=\"").append(action)
                .append("/complete\">").append(csrf)
                .append("<strong>Complete</strong><span class=\"muted\">The backend did act: store the result found "
                        + "there; every retry gets it replayed.</span>")
                .append("<label>Status<input name=\"status\" type=\"number\" min=\"200\" max=\"599\" required value=\"")
                .append(completeAgain ? esc(form.status()) : "").append("\"></label>")
                .append("<label>Content-Type<input name=\"contentType\" class=\"mono\" value=\"")
                .append(esc(completeAgain ? form.contentType() : SettleForm.EMPTY.contentType()))
                .append("\"></label>")
                .append("<label>Body<textarea name=\"body\">").append(completeAgain ? esc(form.body()) : "")
                .append("</textarea></label>")
                .append("<label>Reason (one line, logged)<input name=\"reason\" required maxlength=\"500\" value=\"")
                .append(completeAgain ? esc(form.reason()) : "").append("\"></label>")
                .append("<button type=\"submit\">Complete</button></form>");
        return html.append("</div>").toString();
    }

    private static void field(StringBuilder html, String name, String valueHtml) {
        html.append("<dt>").append(esc(name)).append("</dt><dd>").append(valueHtml).append("</dd>");
    }

    private static void optional(StringBuilder html, String name, @Nullable String value,
            Function<String, String> toHtml) {
        if (value != null && !value.isBlank()) {
            field(html, name, toHtml.apply(value));
        }
    }

    private static String code(@Nullable String text) {
        return "<code>" + esc(text) + "</code>";
    }

    private static String time(@Nullable String instant, Instant now) {
        if (instant == null) {
            return "";
        }
        return esc(instant) + " <span class=\"muted\">(" + esc(age(instant, now)) + " ago)</span>";
    }

    // ---------------------------------------------------------------- sign-in

    static String login(String base, Optional<Csrf> csrf, boolean failed, boolean signedOut) {
        StringBuilder html = new StringBuilder(2048);
        html.append(document("Sign in", "<header><strong>Idempotency console</strong></header><main>"));
        if (failed) {
            html.append(new Notice(true, "Wrong user name or password.").html());
        }
        if (signedOut) {
            html.append(new Notice(false, "Signed out.").html());
        }
        html.append("<h1>Sign in</h1><form class=\"bar\" method=\"post\" action=\"").append(esc(base))
                .append("/login\">").append(csrf.map(Csrf::field).orElse(""))
                .append("<label>User<input name=\"username\" id=\"username\" autocomplete=\"username\" required>"
                        + "</label>")
                .append("<label>Password<input name=\"password\" id=\"password\" type=\"password\" "
                        + "autocomplete=\"current-password\" required></label>")
                .append("<button type=\"submit\">Sign in</button></form>")
                .append("<p class=\"muted\">The operator account: <code>idempotency.operator.username</code> and "
                        + "<code>idempotency.operator.password</code>.</p>");
        return html.append(foot()).toString();
    }

    // ---------------------------------------------------------------- frame

    private static String head(String title, String base, Session session) {
        String signOut = "<form class=\"inline\" method=\"post\" action=\"" + esc(base) + "/logout\">"
                + session.csrf().map(Csrf::field).orElse("") + "<button type=\"submit\">Sign out</button></form>";
        return document(title, "<header><strong>Idempotency console</strong><a href=\"" + esc(base)
                + "\">Records</a><span class=\"who\">Signed in as <strong id=\"user\">" + esc(session.user())
                + "</strong></span>" + signOut + "</header><main>");
    }

    private static String document(String title, String bodyStart) {
        return "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" + esc(title)
                + " · Idempotency console</title><style>" + STYLE + "</style></head><body>" + bodyStart;
    }

    private static String foot() {
        return "</main></body></html>";
    }

    // ---------------------------------------------------------------- text

    /** How long ago an ISO-8601 instant was, in the two largest units: {@code 4 min 10 s}, {@code 2 h 5 min}. */
    static String age(@Nullable String instant, Instant now) {
        if (instant == null) {
            return "";
        }
        try {
            return duration(Duration.between(Instant.parse(instant), now));
        } catch (DateTimeParseException notAnInstant) {
            return "";
        }
    }

    static String duration(Duration duration) {
        long s = Math.max(0, duration.getSeconds());
        if (s < 60) {
            return s + " s";
        }
        if (s < 3600) {
            return (s / 60) + " min " + (s % 60) + " s";
        }
        if (s < 86_400) {
            return (s / 3600) + " h " + (s % 3600 / 60) + " min";
        }
        return (s / 86_400) + " d " + (s % 86_400 / 3600) + " h";
    }

    private static String shorten(@Nullable String text, int length) {
        if (text == null) {
            return "";
        }
        return text.length() <= length ? text : text.substring(0, length) + "…";
    }

    private static String nullToEmpty(@Nullable String text) {
        return text == null ? "" : text;
    }
}
