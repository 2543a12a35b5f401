package dev.retrysafe.gateway.console;

import com.samskivert.mustache.Mustache;
import com.samskivert.mustache.Template;
import dev.retrysafe.gateway.console.ConsoleViews.Found;
import dev.retrysafe.gateway.console.ConsoleViews.Frame;
import dev.retrysafe.gateway.console.ConsoleViews.Group;
import dev.retrysafe.gateway.console.ConsoleViews.Header;
import dev.retrysafe.gateway.console.ConsoleViews.HeaderTable;
import dev.retrysafe.gateway.console.ConsoleViews.ListPage;
import dev.retrysafe.gateway.console.ConsoleViews.LoginPage;
import dev.retrysafe.gateway.console.ConsoleViews.RecordPage;
import dev.retrysafe.gateway.console.ConsoleViews.Response;
import dev.retrysafe.gateway.console.ConsoleViews.Routes;
import dev.retrysafe.gateway.console.ConsoleViews.Row;
import dev.retrysafe.gateway.console.ConsoleViews.Settle;
import dev.retrysafe.gateway.console.ConsoleViews.SignedIn;
import dev.retrysafe.gateway.console.ConsoleViews.StateOption;
import dev.retrysafe.gateway.console.ConsoleViews.Table;
import dev.retrysafe.gateway.console.ConsoleViews.Tenant;
import dev.retrysafe.gateway.console.ConsoleViews.Time;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.springframework.web.util.UriUtils;

/**
 * The console's pages: what a page shows is prepared here as {@link ConsoleViews} records (texts, ages, links,
 * labels), and the markup is in the Mustache templates under {@code templates/console/}, which escape every value
 * they are given. Nothing here writes HTML.
 */
final class ConsolePages {
    static final String ANONYMOUS_TENANT_HASH = IdempotencyScope.tenantHash("");
    private static final String TEMPLATES = "templates/";

    private final Template list;
    private final Template record;
    private final Template login;

    ConsolePages(Mustache.Compiler compiler) {
        this.list = compiler.loadTemplate("console/list");
        this.record = compiler.loadTemplate("console/record");
        this.login = compiler.loadTemplate("console/login");
    }

    /**
     * JMustache as the console uses it: every {@code {{value}}} escaped for HTML; a name that neither the view nor
     * a section around it has is an error, so a misspelt name fails the pages' tests instead of showing nothing.
     */
    static Mustache.Compiler compiler() {
        return Mustache.compiler().escapeHTML(true).strictSections(true).withLoader(ConsolePages::template);
    }

    /** A template or partial by name ({@code console/list}); without its file's last line break, to sit in a line. */
    private static Reader template(String name) {
        String path = TEMPLATES + name + ".mustache";
        try (InputStream in = ConsolePages.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalArgumentException("No console template " + path);
            }
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            return new StringReader(text.endsWith("\n") ? text.substring(0, text.length() - 1) : text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The token a form must send back (Spring Security's CSRF protection), when there is one. */
    record Csrf(String parameterName, String token) {
    }

    /** A message above the page's content; {@code error} for a refused settlement or lookup. */
    record Notice(boolean error, String text) {
    }

    /**
     * The list's filter as entered: route (that reserved a record), operation (that scopes it), raw tenant (hashed
     * for the lookup), states, IN_FLIGHT age threshold.
     */
    record ListFilter(String route, String operation, String tenant, String state, long inFlightOlderThanSeconds) {
    }

    /** What the operator typed into a settlement form, shown again when it is refused. */
    record SettleForm(String action, String reason, String status, String contentType, String body) {
        static final SettleForm EMPTY = new SettleForm("", "", "", "application/json", "");
    }

    /** Who is signed in, and the token the sign-out form needs. */
    record Session(String user, Optional<Csrf> csrf) {
    }

    // ---------------------------------------------------------------- the list

    String list(String base, Session session, ListFilter filter, List<RecordView> records, int limit, Instant now,
            Optional<Notice> notice) {
        ConsoleViews.FilterForm form = new ConsoleViews.FilterForm(base, filter.route(), filter.operation(),
                filter.tenant(),
                List.of(option("", "UNCERTAIN and long IN_FLIGHT", filter.state()),
                        option("UNCERTAIN", "UNCERTAIN", filter.state()),
                        option("IN_FLIGHT", "IN_FLIGHT", filter.state())),
                filter.inFlightOlderThanSeconds());
        Table table = records.isEmpty() ? null
                : new Table(groups(base, filter, records, now), records.size() >= limit ? limit : null);
        return list.execute(new ListPage(frame("Records to look at", base, session, notice.stream().toList()), form,
                base + "/find", table));
    }

    private static StateOption option(String value, String label, String selected) {
        return new StateOption(value, label, value.equals(selected));
    }

    /**
     * By operation, then tenant, oldest reservation first: the records of one operation share its keys, whichever
     * route reserved them.
     */
    private static List<Group> groups(String base, ListFilter filter, List<RecordView> records, Instant now) {
        Map<String, List<RecordView>> groups = new LinkedHashMap<>();
        records.stream()
                .sorted(Comparator.comparing((RecordView v) -> nullToEmpty(v.operation()))
                        .thenComparing(v -> nullToEmpty(v.tenantHash()))
                        .thenComparing(v -> nullToEmpty(v.reservedAt())))
                .forEach(v -> groups.computeIfAbsent(nullToEmpty(v.operation()) + "\n" + nullToEmpty(v.tenantHash()),
                        k -> new ArrayList<>()).add(v));
        List<Group> shown = new ArrayList<>();
        for (List<RecordView> group : groups.values()) {
            RecordView first = group.get(0);
            List<Row> rows = group.stream().map(v -> new Row(nullToEmpty(v.scopeHash()), nullToEmpty(v.state()),
                    nullToEmpty(v.reservedAt()), age(v.reservedAt(), now), attempts(v), request(v),
                    nullToEmpty(v.fingerprint()), shorten(v.fingerprint(), 12), why(v), recordLink(base, v.scopeHash()),
                    shorten(v.scopeHash(), 16))).toList();
            String operation = nullToEmpty(first.operation());
            shown.add(new Group(operation, routes(operation, group), tenant(first.tenantHash(), filter.tenant()),
                    group.size() + (group.size() == 1 ? " record" : " records"), rows));
        }
        return shown;
    }

    /** The routes that reserved a group's records; none to show when that is only the route the operation names. */
    private static @Nullable Routes routes(String operation, List<RecordView> group) {
        Set<String> ids = group.stream().map(v -> nullToEmpty(v.route()))
                .collect(Collectors.toCollection(TreeSet::new));
        if (ids.equals(Set.of(operation))) {
            return null;
        }
        return new Routes(ids.size() == 1 ? "route" : "routes", List.copyOf(ids));
    }

    /** The tenant is stored as a hash only: named when it is the one the operator filtered by. */
    private static Tenant tenant(@Nullable String tenantHash, String enteredTenant) {
        boolean entered = !enteredTenant.isBlank() && IdempotencyScope.tenantHash(enteredTenant).equals(tenantHash);
        return new Tenant(ANONYMOUS_TENANT_HASH.equals(tenantHash), entered ? enteredTenant : null,
                nullToEmpty(tenantHash), shorten(tenantHash, 12));
    }

    private static @Nullable String request(RecordView v) {
        if (v.method() == null && v.path() == null) {
            return null;
        }
        return nullToEmpty(v.method()) + " " + nullToEmpty(v.path());
    }

    private static String why(RecordView v) {
        if ("IN_FLIGHT".equals(v.state())) {
            return v.leaseUntil() == null ? "in flight" : "in flight, lease until " + v.leaseUntil();
        }
        return nullToEmpty(v.uncertainReason());
    }

    // ---------------------------------------------------------------- one record

    String detail(String base, Session session, String scopeHash, @Nullable RecordView view, Instant now,
            Optional<Notice> notice, SettleForm form) {
        Frame frame = frame("Record " + shorten(scopeHash, 16), base, session, notice.stream().toList());
        return record.execute(new RecordPage(frame, scopeHash, view == null ? null : found(base, session, view, now,
                form), base));
    }

    private static Found found(String base, Session session, RecordView view, Instant now, SettleForm form) {
        String process = view.processId() == null ? null
                : view.processId() + " " + nullToEmpty(view.processState()) + " " + nullToEmpty(view.processStatus());
        return new Found(nullToEmpty(view.state()), nullToEmpty(view.operation()), nullToEmpty(view.route()),
                ANONYMOUS_TENANT_HASH.equals(view.tenantHash()), nullToEmpty(view.tenantHash()), request(view),
                nullToEmpty(view.fingerprint()), nullToEmpty(view.upstream()), attempts(view),
                time(view.reservedAt(), now), shown(view.leaseUntil()), time(shown(view.uncertainAt()), now),
                shown(view.uncertainReason()), time(shown(view.completedAt()), now),
                view.status() == null ? null : view.status().toString(), shown(process), shown(view.resolvedBy()),
                shown(view.resolvedReason()),
                view.expiresInSeconds() == null ? null : duration(Duration.ofSeconds(view.expiresInSeconds())),
                response(view.response()), settle(base, session, view, form));
    }

    private static @Nullable Response response(RecordView.@Nullable StoredBody stored) {
        if (stored == null) {
            return null;
        }
        List<Header> headers = stored.headers() == null ? List.of() : stored.headers().stream()
                .map(h -> new Header(h.get(0), h.size() > 1 ? h.get(1) : "")).toList();
        return new Response(stored.status(), stored.unreadable(), headers.isEmpty() ? null : new HeaderTable(headers),
                stored.body(), stored.body() == null ? stored.bodyBase64() : null, stored.bodyOmitted());
    }

    /** Only what is not settled yet can be settled; a refused form comes back as the operator typed it. */
    private static @Nullable Settle settle(String base, Session session, RecordView view, SettleForm form) {
        if (!"IN_FLIGHT".equals(view.state()) && !"UNCERTAIN".equals(view.state())) {
            return null;
        }
        String action = recordLink(base, view.scopeHash());
        boolean releaseAgain = "release".equals(form.action());
        boolean completeAgain = "complete".equals(form.action());
        return new Settle("IN_FLIGHT".equals(view.state()), action + "/release", action + "/complete",
                session.csrf().orElse(null), releaseAgain ? form.reason() : "", completeAgain ? form.status() : "",
                completeAgain ? form.contentType() : SettleForm.EMPTY.contentType(), completeAgain ? form.body() : "",
                completeAgain ? form.reason() : "");
    }

    private static @Nullable Time time(@Nullable String instant, Instant now) {
        return instant == null ? null : new Time(instant, age(instant, now));
    }

    // ---------------------------------------------------------------- sign-in

    String login(String base, Optional<Csrf> csrf, boolean failed, boolean signedOut) {
        List<Notice> notices = new ArrayList<>();
        if (failed) {
            notices.add(new Notice(true, "Wrong user name or password."));
        }
        if (signedOut) {
            notices.add(new Notice(false, "Signed out."));
        }
        return login.execute(new LoginPage(new Frame("Sign in", null, notices), base + "/login", csrf.orElse(null)));
    }

    // ---------------------------------------------------------------- frame

    private static Frame frame(String title, String base, Session session, List<Notice> notices) {
        return new Frame(title, new SignedIn(session.user(), base, base + "/logout", session.csrf().orElse(null)),
                notices);
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

    /** A record's page: the scope hash (from a URL, so it may hold anything) percent-encoded as a path segment. */
    private static String recordLink(String base, @Nullable String scopeHash) {
        return base + "/records/" + UriUtils.encodePathSegment(nullToEmpty(scopeHash), StandardCharsets.UTF_8);
    }

    private static String attempts(RecordView v) {
        return v.attempts() == null ? "" : v.attempts().toString();
    }

    private static String shorten(@Nullable String text, int length) {
        if (text == null) {
            return "";
        }
        return text.length() <= length ? text : text.substring(0, length) + "…";
    }

    /** An optional field is shown only with something in it. */
    private static @Nullable String shown(@Nullable String text) {
        return text == null || text.isBlank() ? null : text;
    }

    private static String nullToEmpty(@Nullable String text) {
        return text == null ? "" : text;
    }
}
