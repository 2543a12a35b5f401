package dev.retrysafe.gateway.console;

import dev.retrysafe.gateway.console.ConsolePages.Csrf;
import dev.retrysafe.gateway.console.ConsolePages.Notice;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What the templates under {@code templates/console/} are given: plain text, ready to show (ages written out, links
 * percent-encoded, labels chosen), each record named as the template's section that shows it. A {@code null} is a
 * section the page leaves out.
 */
final class ConsoleViews {
    private ConsoleViews() {
    }

    /** {@code head.mustache}: the title, who is signed in (none on the sign-in page), the notices above the page. */
    record Frame(String title, @Nullable SignedIn signedIn, List<Notice> notices) {
    }

    record SignedIn(String user, String recordsLink, String signOutAction, @Nullable Csrf csrf) {
    }

    /** {@code list.mustache}: the records to look at, or none ({@code table} null). */
    record ListPage(Frame frame, FilterForm filter, String findAction, @Nullable Table table) {
    }

    record FilterForm(String action, String route, String operation, String tenant, List<StateOption> states,
            long inFlightOlderThanSeconds) {
    }

    record StateOption(String value, String label, boolean selected) {
    }

    /** {@code truncatedAt}: the list's limit, when the list reached it. */
    record Table(List<Group> groups, @Nullable Integer truncatedAt) {
    }

    /**
     * One operation and tenant; {@code routes} the routes that reserved its records, when they are not just the
     * operation's namesake; {@code size} as read ({@code 1 record}, {@code 3 records}).
     */
    record Group(String operation, @Nullable Routes routes, Tenant tenant, String size, List<Row> rows) {
    }

    /** {@code label}: {@code route} or {@code routes}, as many as {@code ids}. */
    record Routes(String label, List<String> ids) {
    }

    /** {@code entered}: the tenant as the operator typed it into the filter, when it is this hash's. */
    record Tenant(boolean anonymous, @Nullable String entered, String hash, String shortHash) {
    }

    /** {@code request}: method and path, when they were recorded. */
    record Row(String scopeHash, String state, String reservedAt, String age, String attempts,
            @Nullable String request, String fingerprint, String shortFingerprint, String why, String link,
            String shortScopeHash) {
    }

    /** {@code record.mustache}: one record, or none ({@code found} null). */
    record RecordPage(Frame frame, String scopeHash, @Nullable Found found, String listLink) {
    }

    /**
     * The record's fields; the optional ones are {@code null} when there is nothing to show. {@code operation} scopes
     * the record, {@code route} reserved it.
     */
    record Found(String state, String operation, String route, boolean anonymousTenant, String tenantHash,
            @Nullable String request, String fingerprint, String upstream, String attempts, @Nullable Time reservedAt,
            @Nullable String leaseUntil, @Nullable Time uncertainAt, @Nullable String uncertainReason,
            @Nullable Time completedAt, @Nullable String status, @Nullable String process,
            @Nullable String resolvedBy, @Nullable String resolvedReason, @Nullable String expiresIn,
            @Nullable Response response, @Nullable Settle settle) {
    }

    /** An instant as stored, and how long ago it was. */
    record Time(String instant, String age) {
    }

    /** The stored response; {@code bodyBase64} only when the body is not UTF-8 text. */
    record Response(int status, @Nullable String unreadable, @Nullable HeaderTable headers, @Nullable String body,
            @Nullable String bodyBase64, boolean bodyOmitted) {
    }

    record HeaderTable(List<Header> rows) {
    }

    record Header(String name, String value) {
    }

    /** The two settlement forms, with what the operator typed into a refused one. */
    record Settle(boolean inFlight, String releaseAction, String completeAction, @Nullable Csrf csrf,
            String releaseReason, String status, String contentType, String body, String completeReason) {
    }

    /** {@code login.mustache}. */
    record LoginPage(Frame frame, String action, @Nullable Csrf csrf) {
    }
}
