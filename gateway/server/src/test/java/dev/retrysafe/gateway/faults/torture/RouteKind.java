package dev.retrysafe.gateway.faults.torture;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The kinds of guarded route a torture run puts behind one gateway, each on its own path to the one recording
 * upstream; every exchange picks one from the seed. The name is how {@code -Dtorture.routes} picks them.
 * {@link #keyInvariants}: what the route kind exists to exercise; a run with every fault that checks one of them on
 * none of its keys fails.
 */
enum RouteKind {
    /** Untracked, the Onboarding contract, reconciling with a lookup the upstream answers without credentials. */
    ONBOARDING("onboarding", "onboarding", "/merchants/torture", 201,
            List.of(InvariantChecker.AT_MOST_ONCE, InvariantChecker.SUCCESS_IS_STORED,
                    InvariantChecker.RECONCILED_AS_ANSWERED)),
    /** A 202 naming a process whose status the fleet polls at the upstream. */
    PROCESS("process-tracking", "tracked", "/tracked/torture", 202,
            List.of(InvariantChecker.SUCCESS_IS_STORED, InvariantChecker.PROCESS_TRACKED)),
    /** {@code contract: ietf}: 400 for a missing key, 422 for another payload, 409 in flight, RFC 9457 bodies. */
    IETF("ietf", "ietf", "/ietf/torture", 201, List.of(InvariantChecker.CONTRACT_KEPT)),
    /**
     * Reconciling with a lookup the upstream answers only with the route's bearer token; its upstream may drop a
     * request before reading it ({@link UpstreamFault#DROP}), so that a lookup releases the UNCERTAIN record.
     */
    RECONCILING("reconciling", "reconciled", "/reconciled/torture", 201,
            List.of(InvariantChecker.RECONCILED_AS_ANSWERED, InvariantChecker.RELEASED_UNRECEIVED,
                    InvariantChecker.NO_EARLY_LOOKUP, InvariantChecker.LOOKUP_AUTHORIZED));

    /** The bearer token the reconciling route's lookups carry and the upstream asks for. */
    static final String LOOKUP_TOKEN = "torture-lookup-token";
    static final String PROCESS_PATH = "/torture-processes/";

    final String label;
    final String routeId;
    final String path;
    /** What the upstream answers a write it takes. */
    final int successStatus;
    final List<String> keyInvariants;

    RouteKind(String label, String routeId, String path, int successStatus, List<String> keyInvariants) {
        this.label = label;
        this.routeId = routeId;
        this.path = path;
        this.successStatus = successStatus;
        this.keyInvariants = keyInvariants;
    }

    /** Whether its upstream may be told to answer a key so: only the reconciling route's upstream drops requests. */
    boolean allows(UpstreamFault fault) {
        return fault != UpstreamFault.DROP || this == RECONCILING;
    }

    /** Whether the route looks UNCERTAIN records up at the upstream. */
    boolean reconciles() {
        return this == ONBOARDING || this == RECONCILING;
    }

    /** Whether the route's lookups must carry {@link #LOOKUP_TOKEN}. */
    boolean lookupSecured() {
        return this == RECONCILING;
    }

    /** The lookup path the upstream serves for this route, the key after it. */
    String lookupPath() {
        return lookupSecured() ? RecordingUpstream.LOOKUP_PATH + "secured/" : RecordingUpstream.LOOKUP_PATH;
    }

    /** The route's Idempotency args, as the YAML would give them. */
    Map<String, String> args(Duration reconcileAfter) {
        Map<String, String> args = new LinkedHashMap<>();
        switch (this) {
            case ONBOARDING -> {
                args.put("reconcile-uri", lookupPath() + "{key}");
                args.put("reconcile-after", reconcileAfter.toMillis() + "ms");
            }
            case PROCESS -> args.put("process-status-uri", PROCESS_PATH + "{processId}");
            case IETF -> args.put("contract", "ietf");
            case RECONCILING -> {
                args.put("reconcile-uri", lookupPath() + "{key}");
                args.put("reconcile-after", reconcileAfter.toMillis() + "ms");
                args.put("reconcile-headers[0]", "Authorization: Bearer ${torture.lookup-token}");
            }
        }
        return args;
    }

    /** The route of a request path, by its prefix; null for none. */
    static RouteKind ofPath(String target) {
        for (RouteKind kind : values()) {
            if (target.startsWith(kind.path)) {
                return kind;
            }
        }
        return null;
    }
}
