package dev.retrysafe.gateway.idempotency.filter;

import dev.retrysafe.gateway.idempotency.decision.OutcomePolicy;
import dev.retrysafe.gateway.idempotency.fingerprint.CanonicalJson;
import dev.retrysafe.gateway.idempotency.fingerprint.RequestFingerprinter;
import dev.retrysafe.gateway.idempotency.key.KeyPolicy;
import dev.retrysafe.gateway.idempotency.key.KeySource;
import dev.retrysafe.gateway.idempotency.pointer.JsonPointer;
import dev.retrysafe.gateway.idempotency.process.ProcessTracking;
import dev.retrysafe.gateway.idempotency.reconcile.LookupTemplate;
import dev.retrysafe.gateway.idempotency.reconcile.Reconciler;
import dev.retrysafe.gateway.idempotency.reconcile.Reconciliation;
import dev.retrysafe.gateway.idempotency.record.StorableHeaders;
import dev.retrysafe.gateway.idempotency.response.ErrorContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.factory.AbstractGatewayFilterFactory;
import org.springframework.util.unit.DataSize;

/**
 * The {@code Idempotency} filter for routes in YAML:
 * <pre>
 * filters:
 *   - name: Idempotency
 *     args:
 *       unordered-arrays: integrations,paymentMethods,sites
 * </pre>
 * Every arg is optional and falls back to the {@code idempotency.*} property of the same name.
 */
public class IdempotencyGatewayFilterFactory extends AbstractGatewayFilterFactory<IdempotencyGatewayFilterFactory.Config> {
    private static final Pattern LEADING_ARG = Pattern.compile("([a-z]+(?:-[a-z]+)*) ");

    private final RouteDefaults defaults;
    private final IdempotencyFilterServices services;
    private final RouteWatchers watchers;
    private final Optional<Duration> responseTimeout;

    /**
     * @param defaults        every arg's value on a route that does not set it
     * @param watchers        what a route with a process-status-uri or a reconcile-uri registers with
     * @param responseTimeout Spring Cloud Gateway's gateway-wide {@code httpclient.response-timeout}, if set: it
     *                        bounds how long a forwarded request may wait for its answer before it is abandoned
     */
    public IdempotencyGatewayFilterFactory(RouteDefaults defaults, IdempotencyFilterServices services,
            RouteWatchers watchers, Optional<Duration> responseTimeout) {
        super(Config.class);
        this.defaults = defaults;
        this.services = services;
        this.watchers = watchers;
        this.responseTimeout = responseTimeout;
    }

    @Override
    public GatewayFilter apply(Config config) {
        RoutePolicy policy = checkedPolicy(defaults, config);
        if (config.getRouteId() != null) {
            // Process polls and lookups find a record's settings by the name it is scoped by: a renamed route that
            // keeps its operation keeps settling the records written before.
            String operation = policy.operationOr(config.getRouteId());
            policy.processTracking().ifPresent(tracking -> {
                watchers.statusObserver().register(operation, tracking, policy.retention());
                watchers.processes().track(operation, tracking, policy.retention());
            });
            policy.reconciliation().ifPresent(reconciliation -> {
                Optional<Reconciler> reconciler = watchers.reconciler();
                if (reconciler.isEmpty()) {
                    throw new IllegalStateException("Route " + config.getRouteId() + " has a reconcile-uri but the "
                            + "gateway has no Reconciler");
                }
                reconciler.get().reconcile(operation, new Reconciler.RouteLookup(reconciliation,
                        policy.storableHeaders(), policy.maxStoredResponseBytes(), policy.retention(),
                        policy.processTracking()));
            });
        }
        return new IdempotencyGatewayFilter(policy, services, responseTimeout);
    }

    /**
     * The route's policy from its args and the defaults, or {@link InvalidRouteSetting} naming the arg and the rule
     * it breaks. Static so that the startup check can run it before Spring Cloud Gateway builds any route.
     */
    public static RoutePolicy checkedPolicy(RouteDefaults defaults, Config config) {
        try {
            return policy(defaults, config);
        } catch (IllegalArgumentException e) {
            throw invalid(config, e);
        }
    }

    private static RoutePolicy policy(RouteDefaults defaults, Config c) {
        int min = or(c.getKeyMinLength(), defaults.keyMinLength());
        int max = or(c.getKeyMaxLength(), defaults.keyMaxLength());
        Set<String> methods = or(c.getMethods(), defaults.methods()).stream()
                .map(m -> m.trim().toUpperCase(Locale.ROOT)).collect(Collectors.toSet());
        KeySource keySource = keySource(defaults, c);
        Optional<Reconciliation> reconciliation = reconciliation(c);
        requireForwardedKey(keySource, reconciliation);
        ErrorContract contract = c.getContract() == null ? defaults.contract() : ErrorContract.named(c.getContract());
        return new RoutePolicy(
                keySource,
                // The draft writes the key as a quoted string: a route that follows it takes the key so written.
                new KeyPolicy(min, max, contract == ErrorContract.IETF),
                methods,
                new RequestFingerprinter(new CanonicalJson(new LinkedHashSet<>(
                        or(c.getUnorderedArrays(), defaults.unorderedArrays())), ignoredFields(c)),
                        defaults.rememberedFingerprints(), or(c.getFingerprintHeaders(), List.of())),
                or(c.getReplayStatus(), defaults.replayStatus()),
                new StorableHeaders(new LinkedHashSet<>(or(c.getNeverStoredHeaders(), defaults.neverStoredHeaders()))),
                or(c.getInFlightWait(), defaults.inFlightWait()),
                or(c.getInFlightLease(), defaults.inFlightLease()),
                or(c.getRetention(), defaults.retention()),
                new OutcomePolicy(or(c.getReleaseOnStatus(), defaults.releaseOnStatus())),
                bytes("max-request-bytes", or(c.getMaxRequestBytes(), defaults.maxRequestBytes())),
                defaults.requestBodyTimeout(),
                bytes("max-stored-response-bytes", or(c.getMaxStoredResponseBytes(), defaults.maxStoredResponseBytes())),
                defaults.storeTimeout(),
                defaults.retryAfter(),
                or(c.getUpstreamHonoursKey(), defaults.upstreamHonoursKey()),
                processTracking(c),
                defaults.forwardWhenStoreUnavailable(),
                reconciliation,
                contract,
                Optional.ofNullable(c.getOperation()).map(String::trim));
    }

    /**
     * {key} in a lookup is the key as the upstream received it, in the key header. A key taken from the body is a
     * hash the upstream never saw, so such a route names the body value itself.
     */
    private static void requireForwardedKey(KeySource keySource, Optional<Reconciliation> reconciliation) {
        if (keySource instanceof KeySource.BodyField field
                && reconciliation.filter(r -> r.template().names().contains(LookupTemplate.KEY)).isPresent()) {
            throw new IllegalArgumentException("reconcile-uri {key} is the key header's value as forwarded, and this "
                    + "route takes its key from the body (key-from: body:" + field.pointer() + "), a hash the "
                    + "upstream never receives: look up by {body:" + field.pointer() + "} instead");
        }
    }

    private static Optional<Reconciliation> reconciliation(Config c) {
        if (c.getReconcileUri() == null) {
            if (c.getReconcileAfter() != null || c.getReconcileFound() != null || c.getReconcileNotFound() != null
                    || c.getReconcileHeaders() != null || c.getReconcileForwardHeaders() != null) {
                throw new IllegalArgumentException("reconcile-uri is needed by reconcile-after, reconcile-found, "
                        + "reconcile-not-found, reconcile-headers and reconcile-forward-headers");
            }
            return Optional.empty();
        }
        return Optional.of(new Reconciliation(LookupTemplate.parse(c.getReconcileUri()),
                Optional.ofNullable(c.getReconcileAfter()), or(c.getReconcileFound(), 200),
                or(c.getReconcileNotFound(), 404), Reconciliation.parseHeaders(or(c.getReconcileHeaders(), List.of())),
                or(c.getReconcileForwardHeaders(), List.of())));
    }

    /**
     * key-from, else key-header (the route's, else the default's). key-from and key-header are two spellings of one
     * setting: a route that sets both to different things has no one key, and is refused.
     */
    private static KeySource keySource(RouteDefaults defaults, Config c) {
        if (c.getKeyFrom() == null) {
            return new KeySource.Header(or(c.getKeyHeader(), defaults.keyHeader()));
        }
        KeySource from = KeySource.parse(c.getKeyFrom());
        if (c.getKeyHeader() != null && !(from instanceof KeySource.Header header
                && header.sameHeader(c.getKeyHeader()))) {
            throw new IllegalArgumentException("key-from '" + c.getKeyFrom() + "' and key-header '"
                    + c.getKeyHeader() + "' name different keys: set only key-from");
        }
        return from;
    }

    private static List<JsonPointer> ignoredFields(Config c) {
        List<JsonPointer> pointers = new ArrayList<>();
        for (String text : or(c.getFingerprintIgnore(), List.<String>of())) {
            try {
                pointers.add(JsonPointer.parse(text.trim()));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("fingerprint-ignore " + e.getMessage(), e);
            }
        }
        return pointers;
    }

    /** Every rule's message starts with the arg it is about ("replay-status must be a 2xx status, was 500"). */
    private static InvalidRouteSetting invalid(Config c, IllegalArgumentException e) {
        String rule = String.valueOf(e.getMessage());
        Matcher named = LEADING_ARG.matcher(rule);
        Optional<String> setting = named.lookingAt() ? Optional.of(named.group(1)) : Optional.empty();
        boolean setOnRoute = setting.map(name -> argSetOnRoute(c, name)).orElse(false);
        InvalidRouteSetting invalid = new InvalidRouteSetting(c.getRouteId() == null ? "" : c.getRouteId(), setting,
                setOnRoute, rule);
        invalid.initCause(e);
        return invalid;
    }

    private static boolean argSetOnRoute(Config c, String arg) {
        String getter = "get" + Arrays.stream(arg.split("-"))
                .map(part -> part.isEmpty() ? part : Character.toUpperCase(part.charAt(0)) + part.substring(1))
                .collect(Collectors.joining());
        try {
            return Config.class.getMethod(getter).invoke(c) != null;
        } catch (ReflectiveOperationException notAnArg) {
            return false;
        }
    }

    private static Optional<ProcessTracking> processTracking(Config c) {
        if (c.getProcessStatusUri() == null) {
            return Optional.empty();
        }
        return Optional.of(new ProcessTracking(c.getProcessStatusUri(),
                or(c.getProcessIdPointer(), "/processId"),
                or(c.getProcessStatusPointer(), "/status"),
                new LinkedHashSet<>(or(c.getProcessTerminalValues(), List.of("COMPLETED", "FAILED"))),
                or(c.getProcessMaxRetention(), Duration.ofDays(7))));
    }

    private static int bytes(String name, DataSize size) {
        if (size.toBytes() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(name + " must be below 2 GB, was " + size);
        }
        return (int) size.toBytes();
    }

    private static <T> T or(T routeValue, T defaultValue) {
        return routeValue != null ? routeValue : defaultValue;
    }

    /** Route args; null means "use the {@code idempotency.*} default". */
    public static class Config implements org.springframework.cloud.gateway.support.HasRouteId {
        private String routeId;
        private String keyHeader;
        private String keyFrom;
        private List<String> fingerprintIgnore;
        private List<String> fingerprintHeaders;
        private Integer keyMinLength;
        private Integer keyMaxLength;
        private List<String> methods;
        private List<String> unorderedArrays;
        private Integer replayStatus;
        private List<String> neverStoredHeaders;
        private Duration inFlightWait;
        private Duration inFlightLease;
        private Duration retention;
        private Set<Integer> releaseOnStatus;
        private DataSize maxRequestBytes;
        private DataSize maxStoredResponseBytes;
        private Boolean upstreamHonoursKey;
        private String processStatusUri;
        private String processIdPointer;
        private String processStatusPointer;
        private List<String> processTerminalValues;
        private Duration processMaxRetention;
        private String reconcileUri;
        private Duration reconcileAfter;
        private Integer reconcileFound;
        private Integer reconcileNotFound;
        private List<String> reconcileHeaders;
        private List<String> reconcileForwardHeaders;
        private String contract;
        private String operation;

        @Override
        public void setRouteId(String routeId) { this.routeId = routeId; }
        @Override
        public String getRouteId() { return routeId; }
        public Boolean getUpstreamHonoursKey() { return upstreamHonoursKey; }
        public void setUpstreamHonoursKey(Boolean upstreamHonoursKey) { this.upstreamHonoursKey = upstreamHonoursKey; }
        public String getProcessStatusUri() { return processStatusUri; }
        public void setProcessStatusUri(String processStatusUri) { this.processStatusUri = processStatusUri; }
        public String getProcessIdPointer() { return processIdPointer; }
        public void setProcessIdPointer(String processIdPointer) { this.processIdPointer = processIdPointer; }
        public String getProcessStatusPointer() { return processStatusPointer; }
        public void setProcessStatusPointer(String processStatusPointer) { this.processStatusPointer = processStatusPointer; }
        public List<String> getProcessTerminalValues() { return processTerminalValues; }
        public void setProcessTerminalValues(List<String> processTerminalValues) { this.processTerminalValues = processTerminalValues; }
        public Duration getProcessMaxRetention() { return processMaxRetention; }
        public void setProcessMaxRetention(Duration processMaxRetention) { this.processMaxRetention = processMaxRetention; }

        public String getKeyFrom() { return keyFrom; }
        public void setKeyFrom(String keyFrom) { this.keyFrom = keyFrom; }
        public List<String> getFingerprintIgnore() { return fingerprintIgnore; }
        public void setFingerprintIgnore(List<String> fingerprintIgnore) { this.fingerprintIgnore = fingerprintIgnore; }
        public List<String> getFingerprintHeaders() { return fingerprintHeaders; }
        public void setFingerprintHeaders(List<String> fingerprintHeaders) { this.fingerprintHeaders = fingerprintHeaders; }
        public String getReconcileUri() { return reconcileUri; }
        public void setReconcileUri(String reconcileUri) { this.reconcileUri = reconcileUri; }
        public Duration getReconcileAfter() { return reconcileAfter; }
        public void setReconcileAfter(Duration reconcileAfter) { this.reconcileAfter = reconcileAfter; }
        public Integer getReconcileFound() { return reconcileFound; }
        public void setReconcileFound(Integer reconcileFound) { this.reconcileFound = reconcileFound; }
        public Integer getReconcileNotFound() { return reconcileNotFound; }
        public void setReconcileNotFound(Integer reconcileNotFound) { this.reconcileNotFound = reconcileNotFound; }
        public List<String> getReconcileHeaders() { return reconcileHeaders; }
        public void setReconcileHeaders(List<String> reconcileHeaders) { this.reconcileHeaders = reconcileHeaders; }
        public List<String> getReconcileForwardHeaders() { return reconcileForwardHeaders; }
        public void setReconcileForwardHeaders(List<String> reconcileForwardHeaders) {
            this.reconcileForwardHeaders = reconcileForwardHeaders;
        }

        /** The name that scopes the route's records; null: the route id. */
        public String getOperation() { return operation; }
        public void setOperation(String operation) { this.operation = operation; }

        /** {@code onboarding} or {@code ietf}: a String, so that another value is refused naming both. */
        public String getContract() { return contract; }
        public void setContract(String contract) { this.contract = contract; }

        public String getKeyHeader() { return keyHeader; }
        public void setKeyHeader(String keyHeader) { this.keyHeader = keyHeader; }
        public Integer getKeyMinLength() { return keyMinLength; }
        public void setKeyMinLength(Integer keyMinLength) { this.keyMinLength = keyMinLength; }
        public Integer getKeyMaxLength() { return keyMaxLength; }
        public void setKeyMaxLength(Integer keyMaxLength) { this.keyMaxLength = keyMaxLength; }
        public List<String> getMethods() { return methods; }
        public void setMethods(List<String> methods) { this.methods = methods; }
        public List<String> getUnorderedArrays() { return unorderedArrays; }
        public void setUnorderedArrays(List<String> unorderedArrays) { this.unorderedArrays = unorderedArrays; }
        public Integer getReplayStatus() { return replayStatus; }
        public void setReplayStatus(Integer replayStatus) { this.replayStatus = replayStatus; }
        public List<String> getNeverStoredHeaders() { return neverStoredHeaders; }
        public void setNeverStoredHeaders(List<String> neverStoredHeaders) { this.neverStoredHeaders = neverStoredHeaders; }
        public Duration getInFlightWait() { return inFlightWait; }
        public void setInFlightWait(Duration inFlightWait) { this.inFlightWait = inFlightWait; }
        public Duration getInFlightLease() { return inFlightLease; }
        public void setInFlightLease(Duration inFlightLease) { this.inFlightLease = inFlightLease; }
        public Duration getRetention() { return retention; }
        public void setRetention(Duration retention) { this.retention = retention; }
        public Set<Integer> getReleaseOnStatus() { return releaseOnStatus; }
        public void setReleaseOnStatus(Set<Integer> releaseOnStatus) { this.releaseOnStatus = releaseOnStatus; }
        public DataSize getMaxRequestBytes() { return maxRequestBytes; }
        public void setMaxRequestBytes(DataSize maxRequestBytes) { this.maxRequestBytes = maxRequestBytes; }
        public DataSize getMaxStoredResponseBytes() { return maxStoredResponseBytes; }
        public void setMaxStoredResponseBytes(DataSize maxStoredResponseBytes) { this.maxStoredResponseBytes = maxStoredResponseBytes; }
    }
}
