package dev.retrysafe.gateway.console;

import dev.retrysafe.gateway.console.ConsolePages.Csrf;
import dev.retrysafe.gateway.console.ConsolePages.ListFilter;
import dev.retrysafe.gateway.console.ConsolePages.Notice;
import dev.retrysafe.gateway.console.ConsolePages.Session;
import dev.retrysafe.gateway.console.ConsolePages.SettleForm;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.operator.IdempotencyOperatorEndpoint;
import dev.retrysafe.gateway.idempotency.operator.RecordFilter;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.net.URI;
import java.security.Principal;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.security.core.Authentication;
import org.springframework.security.web.server.csrf.CsrfToken;
import org.springframework.util.MultiValueMap;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The operator console's handlers: the list of records to look at, one record, and its two settlements. Records
 * are read through the {@link RecordInspector}, with the operator API's defaults; settlements go through
 * {@link IdempotencyOperatorEndpoint#resolve} itself, so the console checks and logs exactly what the API does.
 */
final class OperatorConsole {
    private static final Logger log = LoggerFactory.getLogger(OperatorConsole.class);
    static final String PATH = "/console";
    static final int LIMIT = 200;
    private static final long DEFAULT_IN_FLIGHT_OLDER_THAN_SECONDS = 60;
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final java.util.regex.Pattern SCOPE_HASH = java.util.regex.Pattern.compile("[A-Za-z0-9_-]{1,64}");
    private static final MediaType HTML = new MediaType("text", "html", java.nio.charset.StandardCharsets.UTF_8);
    private static final ListFilter NO_FILTER = new ListFilter("", "", "", "", DEFAULT_IN_FLIGHT_OLDER_THAN_SECONDS);

    private final RecordInspector inspector;
    private final IdempotencyOperatorEndpoint endpoint;
    private final ConsolePages pages;
    private final Clock clock;

    OperatorConsole(RecordInspector inspector, IdempotencyOperatorEndpoint endpoint, ConsolePages pages, Clock clock) {
        this.inspector = inspector;
        this.endpoint = endpoint;
        this.pages = pages;
        this.clock = clock;
    }

    RouterFunction<ServerResponse> routes() {
        return RouterFunctions.route()
                .GET(PATH, this::list)
                .GET(PATH + "/login", this::login)
                .GET(PATH + "/find", this::find)
                .GET(PATH + "/records/{scopeHash}", this::detail)
                .POST(PATH + "/records/{scopeHash}/release", request -> settle(request, "release"))
                .POST(PATH + "/records/{scopeHash}/complete", request -> settle(request, "complete"))
                .build();
    }

    private Mono<ServerResponse> list(ServerRequest request) {
        String route = param(request, "route");
        String operation = param(request, "operation");
        String tenant = param(request, "tenant");
        String state = param(request, "state").toUpperCase(Locale.ROOT);
        long olderThan = seconds(param(request, "inFlightOlderThanSeconds"));
        ListFilter shown = new ListFilter(route, operation, tenant, state, olderThan);
        RecordFilter filter = new RecordFilter(state.isEmpty() ? Set.of("UNCERTAIN", "IN_FLIGHT") : Set.of(state),
                Optional.of(route).filter(r -> !r.isBlank()), Optional.of(operation).filter(o -> !o.isBlank()),
                Optional.of(tenant).filter(t -> !t.isBlank()).map(IdempotencyScope::tenantHash),
                Duration.ofSeconds(olderThan), LIMIT);
        // Only a scope hash is repeated from the URL: a link cannot put other words into the console's mouth.
        String released = param(request, "scope");
        Optional<Notice> notice = "release".equals(param(request, "settled")) && SCOPE_HASH.matcher(released).matches()
                ? Optional.of(new Notice(false, "Released " + released
                        + ": the client's next retry with its key is forwarded to the upstream."))
                : Optional.empty();
        return Mono.zip(session(request), inspector.list(filter).collectList().timeout(TIMEOUT))
                .flatMap(both -> html(HttpStatus.OK, pages.list(base(request), both.getT1(), shown,
                        both.getT2(), LIMIT, clock.instant(), notice)))
                .onErrorResume(e -> storeUnavailable(request, shown, "list the records", e));
    }

    /**
     * Redis did not answer (down, failing over, slower than the console waits): the operator gets a page that says
     * so and can retry, not a bare 500.
     */
    private Mono<ServerResponse> storeUnavailable(ServerRequest request, ListFilter shown, String what, Throwable e) {
        log.warn("Operator console could not {}: {}", what, e.toString());
        Notice notice = new Notice(true, "The idempotency store did not answer within " + TIMEOUT.toSeconds()
                + " s, so the console could not " + what + ". Nothing was changed; try again in a moment.");
        return session(request).flatMap(session -> html(HttpStatus.SERVICE_UNAVAILABLE, pages.list(
                base(request), session, shown, List.of(), LIMIT, clock.instant(), Optional.of(notice))));
    }

    private Mono<ServerResponse> login(ServerRequest request) {
        return csrf(request).map(Optional::of).defaultIfEmpty(Optional.empty())
                .flatMap(csrf -> html(HttpStatus.OK, pages.login(base(request), csrf,
                        request.queryParam("error").isPresent(), request.queryParam("logout").isPresent())));
    }

    /**
     * By operation + key (+ tenant), as the operator API's lookup, or by scope hash: on to that record's page. A
     * {@code route} without an operation is taken as one, as links and bookmarks from before routes named it do.
     */
    private Mono<ServerResponse> find(ServerRequest request) {
        String scopeHash = param(request, "scopeHash").trim();
        String key = param(request, "key").trim();
        String operation = param(request, "operation").isBlank() ? param(request, "route").trim()
                : param(request, "operation").trim();
        if (scopeHash.isEmpty()) {
            String problem = null;
            if (key.isEmpty() || operation.isEmpty()) {
                problem = "Give an operation (the route id by default) and an Idempotency-Key (and the tenant, if"
                        + " any), or a scope hash.";
            } else {
                try {
                    scopeHash = new IdempotencyScope(param(request, "tenant").trim(), operation,
                            new IdempotencyKey(key)).hash();
                } catch (IllegalArgumentException invalid) {
                    problem = "Not a valid idempotency key.";
                }
            }
            if (problem != null) {
                Notice notice = new Notice(true, problem);
                return session(request).flatMap(session -> html(HttpStatus.BAD_REQUEST, pages.list(
                        base(request), session, NO_FILTER, List.of(), LIMIT, clock.instant(), Optional.of(notice))));
            }
        }
        return seeOther(recordUri(request, scopeHash, null));
    }

    private Mono<ServerResponse> detail(ServerRequest request) {
        String scopeHash = request.pathVariable("scopeHash");
        Optional<Notice> notice = "complete".equals(param(request, "settled"))
                ? Optional.of(new Notice(false, "Completed: every retry with its key now gets this response."))
                : Optional.empty();
        return page(request, scopeHash, HttpStatus.OK, notice, SettleForm.EMPTY);
    }

    private Mono<ServerResponse> page(ServerRequest request, String scopeHash, HttpStatus status,
            Optional<Notice> notice, SettleForm form) {
        Mono<Optional<RecordView>> view = inspector.find(scopeHash, true).timeout(TIMEOUT).map(Optional::of)
                .defaultIfEmpty(Optional.empty());
        return Mono.zip(session(request), view).flatMap(both -> html(
                both.getT2().isEmpty() && status == HttpStatus.OK ? HttpStatus.NOT_FOUND : status,
                pages.detail(base(request), both.getT1(), scopeHash, both.getT2().orElse(null),
                        clock.instant(), notice, form)))
                .onErrorResume(e -> storeUnavailable(request, NO_FILTER,
                        "read record " + (SCOPE_HASH.matcher(scopeHash).matches() ? scopeHash : "(not a scope hash)"),
                        e));
    }

    /**
     * A settlement form, handed to the operator endpoint as the API's POST would be: the endpoint checks it (the
     * same 400s), applies it and writes the audit line with the signed-in operator's name and the reason.
     */
    private Mono<ServerResponse> settle(ServerRequest request, String action) {
        String scopeHash = request.pathVariable("scopeHash");
        return Mono.zip(request.formData(), request.principal().map(Optional::of).defaultIfEmpty(Optional.empty()))
                .flatMap(both -> {
                    MultiValueMap<String, String> data = both.getT1();
                    SettleForm form = new SettleForm(action, value(data, "reason"), value(data, "status").trim(),
                            value(data, "contentType").trim(), value(data, "body"));
                    Principal who = both.getT2().orElse(null);
                    return Mono.fromCallable(() -> endpoint.resolve(scopeHash, action, form.reason(),
                                    status(form.status()), blankToNull(form.body()), blankToNull(form.contentType()),
                                    new OperatorSecurityContext(who)))
                            // The endpoint waits for Redis: never on a Netty event loop.
                            .subscribeOn(Schedulers.boundedElastic())
                            .flatMap(result -> answer(request, scopeHash, action, form, result));
                });
    }

    private Mono<ServerResponse> answer(ServerRequest request, String scopeHash, String action, SettleForm form,
            WebEndpointResponse<Object> result) {
        if (result.getStatus() == 200) {
            return seeOther("release".equals(action)
                    ? URI.create(base(request) + "?settled=release&scope="
                            + org.springframework.web.util.UriUtils.encodeQueryParam(scopeHash,
                                    java.nio.charset.StandardCharsets.UTF_8))
                    : recordUri(request, scopeHash, "complete"));
        }
        Map<?, ?> body = result.getBody() instanceof Map<?, ?> map ? map : Map.of();
        String message = switch (result.getStatus()) {
            case 400 -> "Not settled: " + body.get("error") + ".";
            case 404 -> "Not settled: there is no record for this scope hash any more.";
            case 409 -> "Not settled: the record is " + body.get("previousState")
                    + " now; only IN_FLIGHT or UNCERTAIN records can be settled.";
            default -> "Not settled (" + result.getStatus() + ").";
        };
        return page(request, scopeHash, HttpStatus.valueOf(result.getStatus()), Optional.of(new Notice(true, message)),
                form);
    }

    private Mono<Session> session(ServerRequest request) {
        Mono<String> user = request.principal().map(Principal::getName).defaultIfEmpty("");
        Mono<Optional<Csrf>> csrf = csrf(request).map(Optional::of).defaultIfEmpty(Optional.empty());
        return Mono.zip(user, csrf).map(both -> new Session(both.getT1(), both.getT2()));
    }

    /** Spring Security's token for this session, when its CSRF protection runs (it does on /console/**). */
    private static Mono<Csrf> csrf(ServerRequest request) {
        Mono<CsrfToken> token = request.exchange().getAttribute(CsrfToken.class.getName());
        return token == null ? Mono.empty()
                : token.map(t -> new Csrf(t.getParameterName(), t.getToken()));
    }

    private static Mono<ServerResponse> html(HttpStatus status, String page) {
        return ServerResponse.status(status).contentType(HTML).bodyValue(page);
    }

    private static Mono<ServerResponse> seeOther(URI location) {
        return ServerResponse.status(HttpStatus.SEE_OTHER).location(location).build();
    }

    private static URI recordUri(ServerRequest request, String scopeHash, @Nullable String settled) {
        return URI.create(base(request) + "/records/" + org.springframework.web.util.UriUtils.encodePathSegment(
                scopeHash, java.nio.charset.StandardCharsets.UTF_8) + (settled == null ? "" : "?settled=" + settled));
    }

    /** Where the console is, behind the management server's base path if it has one. */
    private static String base(ServerRequest request) {
        return request.requestPath().contextPath().value() + PATH;
    }

    private static String param(ServerRequest request, String name) {
        return request.queryParam(name).orElse("");
    }

    private static String value(MultiValueMap<String, String> form, String name) {
        String value = form.getFirst(name);
        return value == null ? "" : value;
    }

    private static long seconds(String text) {
        try {
            return Math.max(0, Long.parseLong(text.trim()));
        } catch (NumberFormatException notANumber) {
            return DEFAULT_IN_FLIGHT_OLDER_THAN_SECONDS;
        }
    }

    /** Not a number: left to the settlement's own check ("complete needs a final HTTP status"). */
    private static @Nullable Integer status(String text) {
        try {
            return text.isEmpty() ? null : Integer.valueOf(text);
        } catch (NumberFormatException notANumber) {
            return null;
        }
    }

    private static @Nullable String blankToNull(String text) {
        return text.isEmpty() ? null : text;
    }

    /** The signed-in operator, as the endpoint asks for it (the API gets the same from Actuator). */
    private static final class OperatorSecurityContext implements SecurityContext {
        private final @Nullable Principal principal;

        OperatorSecurityContext(@Nullable Principal principal) {
            this.principal = principal;
        }

        @Override
        public @Nullable Principal getPrincipal() {
            return principal;
        }

        @Override
        public boolean isUserInRole(String role) {
            return principal instanceof Authentication authentication && authentication.getAuthorities().stream()
                    .anyMatch(granted -> ("ROLE_" + role).equals(granted.getAuthority()));
        }
    }
}
