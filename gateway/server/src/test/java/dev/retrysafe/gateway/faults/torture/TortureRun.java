package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.faults.torture.RecordingUpstream.Receipt;
import dev.retrysafe.gateway.faults.torture.WireClient.Attempt;
import dev.retrysafe.gateway.embedded.EmbeddedRedisServer;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import dev.retrysafe.gateway.idempotency.operator.RecordView;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.RedisFaultProxy;
import dev.retrysafe.gateway.support.RestartableRedis;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.springframework.context.ConfigurableApplicationContext;
import reactor.core.publisher.Flux;

/**
 * One torture run: its own Redis, the recording upstream and a real gateway with short timeouts, so that every
 * exchange ends within the run; randomized exchanges from the seed on a pool of client threads; then a bounded wait
 * for in-flight exchanges to settle, and the invariants over the records, the upstream log and what clients got.
 * With store faults ({@link TortureSettings#storeFaulted()}) the gateway reaches a restartable Redis through the
 * {@link RedisFaultProxy}, with {@link #STORE_TIMEOUT}, while the {@link StoreNemesis} faults it; once the faults
 * end, each write the upstream acknowledged is retried cleanly and must replay. On a Sentinel or Cluster topology
 * ({@link TortureSettings#topology()}) the gateway reaches the replicated Redis directly and the nemesis fails its
 * masters over; keys under way within {@link #REPLICATION_WINDOW} before a lossy failover, until the gateway
 * could no longer write to the old master, are exempt as a forgetting restart's are.
 * <p>
 * The gateway guards one route of each {@link RouteKind}, and each exchange picks its route from the seed. After the
 * random exchanges (and the faults), the {@link #DESIGNED} exchanges run once each on a healthy store: each route
 * kind's key invariants are then exercised in every run, whatever the seed's draws and the machine's timing. Before
 * the checks the run waits, on conditions with deadlines, until the reconciling routes have no UNCERTAIN record left
 * to look up and, once the upstream ended every process, the tracking route's records have seen their ends.
 */
final class TortureRun implements AutoCloseable {
    static final Duration LEASE = Duration.ofSeconds(2);
    static final Duration RESPONSE_TIMEOUT = Duration.ofSeconds(1);
    static final Duration REQUEST_BODY_TIMEOUT = Duration.ofSeconds(1);
    static final Duration IN_FLIGHT_WAIT = Duration.ofMillis(1500);
    /** Ticks of the lease ticker and a loaded 2-core machine, on top of lease + response timeout. */
    static final Duration SETTLE_SLACK = Duration.ofSeconds(3);
    /** The store torture's store-timeout (the 300 ms); the wire torture keeps the default. */
    static final Duration STORE_TIMEOUT = Duration.ofMillis(300);
    /** The longest store fault: below the lease, so a correct gateway can always settle within one. */
    static final Duration LONGEST_STORE_FAULT = Duration.ofMillis(1500);
    /**
     * How long before a lossy failover a write may still be missing on the replica that is promoted. Replication on
     * loopback takes well under a millisecond; a second covers a loaded machine and the writes (release, settle)
     * that follow a client's answer.
     */
    static final Duration REPLICATION_WINDOW = Duration.ofSeconds(1);
    /**
     * The route reconciles UNCERTAIN records with the upstream this soon after they turn UNCERTAIN (short, so that
     * most are looked up within the run; the upstream answers its lookups truthfully and at once).
     */
    static final Duration RECONCILE_AFTER = Duration.ofMillis(500);
    /**
     * The longest the run waits after the exchanges for the reconciling routes' UNCERTAIN records to be looked up,
     * and for the tracking route's records to see their processes end: a lookup or a poll that failed on a faulted
     * store comes again after at most a poll claim's 15 s lease, plus the 5 s restore interval for a slot a failover
     * dropped from a queue's directory, plus a loaded machine's slack. Without faults each wait takes a second or two;
     * the deadline is reached only by what would never settle.
     */
    static final Duration FOLLOW_UP_DEADLINE = Duration.ofSeconds(40);

    /** One exchange's route and faults, as drawn from the seed or designed. */
    record Scenario(RouteKind route, ClientFault fault, UpstreamFault upstream) {
    }

    /**
     * Run once each after the random exchanges, on a healthy store: what each route kind's key invariants need.
     * Onboarding: a write stored and a reset one completed by its lookup (1, 5, 10); process tracking: a 202 whose
     * process the fleet polls to its end (5, 14); ietf: a missing key and duplicates with other payloads (13);
     * reconciling: a request dropped unread, released by its secured lookup, and a reset one, completed by it (10,
     * 11, 12, 15).
     */
    static final List<Scenario> DESIGNED = List.of(
            new Scenario(RouteKind.ONBOARDING, ClientFault.CLEAN, UpstreamFault.NORMAL),
            new Scenario(RouteKind.ONBOARDING, ClientFault.CLEAN, UpstreamFault.RESET),
            new Scenario(RouteKind.PROCESS, ClientFault.CLEAN, UpstreamFault.NORMAL),
            new Scenario(RouteKind.IETF, ClientFault.MISSING_KEY, UpstreamFault.NORMAL),
            new Scenario(RouteKind.IETF, ClientFault.DUPLICATES_DIFFERENT_BODIES, UpstreamFault.SLOW),
            new Scenario(RouteKind.RECONCILING, ClientFault.CLEAN, UpstreamFault.DROP),
            new Scenario(RouteKind.RECONCILING, ClientFault.CLEAN, UpstreamFault.RESET));

    /**
     * The longest a client may wait for its answer when Redis misbehaves, from the settings: its own stall
     * (up to 1.5 request-body-timeouts), four store-timeouts (the reserve, the waiter's subscription and the two
     * looks around an in-flight wait), the in-flight wait, the response timeout, one in-flight lease for settling
     * (after it the record is no longer the exchange's to write, so waiting longer buys nothing) and the slack of a
     * loaded machine. With the run's settings: 1.5 + 1.2 + 1.5 + 1 + 2 + 3 = 10.2 s.
     */
    static Duration answerBound() {
        return REQUEST_BODY_TIMEOUT.multipliedBy(3).dividedBy(2).plus(STORE_TIMEOUT.multipliedBy(4))
                .plus(IN_FLIGHT_WAIT).plus(RESPONSE_TIMEOUT).plus(LEASE).plus(SETTLE_SLACK);
    }

    /** The keys of {@link #awaitServing}'s probes: not exchanges of the run. */
    private static final String HEALED_PROBE = "healed-";

    private final TortureSettings settings;
    private final EmbeddedRedisServer redis;
    private final RestartableRedis storeRedis;
    private final RedisFaultProxy proxy;
    private final Failovers failovers;
    private final StoreNotOwnerLog notOwner = new StoreNotOwnerLog();
    private final ReconcilerAuditLog reconciled = new ReconcilerAuditLog();
    private final RecordingUpstream upstream;
    private final WireClient client;
    private volatile ConfigurableApplicationContext gateway;
    private volatile int port;
    private final AtomicInteger finished = new AtomicInteger();
    /** Keys whose exchange is under way, and every key begun, by scope hash. */
    private final Set<String> running = ConcurrentHashMap.newKeySet();
    private final Map<String, String> keysByScope = new ConcurrentHashMap<>();
    /** How long after its client's answer a store call may still land: the complete's retries, and slack. */
    static final Duration STORE_CALLS_OUTLIVE_ANSWER = Duration.ofSeconds(15);
    /** Keys whose records a forgetting restart may have erased: exempt from what needs the record kept. */
    private final Set<String> forgotten = ConcurrentHashMap.newKeySet();
    /** When each key's exchange ended (System.nanoTime): with its start, what a failover's loss window can reach. */
    private final Map<String, Long> endedNanos = new ConcurrentHashMap<>();
    /** Closed while the gateway restarts: exchanges not yet begun wait; those under way meet the closed port. */
    private volatile CountDownLatch gatewayUp = new CountDownLatch(0);

    TortureRun(TortureSettings settings) throws Exception {
        this.settings = settings;
        if (settings.storeFaulted() && settings.topology() != StoreTopology.STANDALONE) {
            redis = null;
            storeRedis = null;
            proxy = null;
            failovers = settings.topology() == StoreTopology.SENTINEL ? new SentinelFailovers()
                    : new ClusterFailovers();
        } else if (settings.storeFaulted()) {
            redis = null;
            storeRedis = RestartableRedis.persistent();
            proxy = new RedisFaultProxy(storeRedis.port());
            failovers = null;
        } else {
            redis = new EmbeddedRedisServer(0, Path.of("target/embedded-redis"));
            redis.start();
            storeRedis = null;
            proxy = null;
            failovers = null;
        }
        upstream = new RecordingUpstream(Duration.ofMillis(300));
        startGateway();
        client = new WireClient(() -> port, Duration.ofSeconds(15), REQUEST_BODY_TIMEOUT.multipliedBy(3).dividedBy(2));
    }

    private void startGateway() {
        Map<String, String> properties = new HashMap<>(Map.of(
                "idempotency.in-flight-lease", LEASE.toMillis() + "ms",
                "idempotency.in-flight-wait", IN_FLIGHT_WAIT.toMillis() + "ms",
                "idempotency.request-body-timeout", REQUEST_BODY_TIMEOUT.toMillis() + "ms",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout", RESPONSE_TIMEOUT.toMillis() + "ms",
                "idempotency.record-counts.enabled", "false",
                // One line per request at INFO would drown the report; warnings and errors still show.
                "logging.level.dev.retrysafe.gateway.idempotency", "WARN",
                // The reconciling route's bearer token, from a property as a real team would give it.
                "torture.lookup-token", RouteKind.LOOKUP_TOKEN));
        // Short follow-ups, so that what the run ends with is looked up and polled within seconds.
        properties.putAll(Map.of("idempotency.process-poll.initial-delay", "200ms",
                "idempotency.process-poll.max-delay", "1s", "idempotency.process-poll.restore-interval", "5s",
                "idempotency.reconcile.retry-delay", "500ms", "idempotency.reconcile.max-retry-delay", "2s",
                "idempotency.reconcile.restore-interval", "5s"));
        String upstreamUri = "http://127.0.0.1:" + upstream.port();
        int index = 0;
        for (RouteKind route : RouteKind.values()) {
            String prefix = "spring.cloud.gateway.server.webflux.routes[" + index++ + "].";
            route.args(RECONCILE_AFTER).forEach((arg, value) -> properties.put(prefix + "filters[0].args." + arg,
                    value));
            if (route != RouteKind.ONBOARDING) { // routes[0], the onboarding route, is Gateways.start's
                properties.put(prefix + "id", route.routeId);
                properties.put(prefix + "uri", upstreamUri);
                properties.put(prefix + "predicates[0]", "Path=" + route.path.substring(0,
                        route.path.lastIndexOf('/')) + "/**");
                properties.put(prefix + "filters[0].name", "Idempotency");
            }
        }
        if (failovers != null) {
            properties.putAll(failovers.gatewayProperties());
        } else {
            properties.put("spring.data.redis.host", "127.0.0.1");
            properties.put("spring.data.redis.port", String.valueOf(proxy != null ? proxy.port() : redis.port()));
        }
        if (settings.storeFaulted()) {
            properties.put("idempotency.store-timeout", STORE_TIMEOUT.toMillis() + "ms");
        }
        gateway = Gateways.start(upstreamUri, RouteKind.ONBOARDING.routeId, Map.of(), properties);
        notOwner.attach();
        reconciled.attach();
        port = gateway.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    }

    /** Runs every exchange, lets the gateway settle, checks; the report says what held. */
    TortureReport run() throws Exception {
        long started = System.nanoTime();
        List<KeyHistory> histories = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(settings.threads());
        boolean restarted = false;
        StoreNemesis nemesis = !settings.storeFaulted() ? null
                : failovers != null ? new StoreNemesis(settings.seed(), settings.storeFaults(), failovers)
                : new StoreNemesis(settings.seed(), settings.storeFaults(), proxy, storeRedis, STORE_TIMEOUT,
                        LONGEST_STORE_FAULT, this::noteForgotten, this::noteRunning);
        try (AutoCloseable faults = nemesis == null ? () -> { } : nemesis) {
            if (nemesis != null) {
                nemesis.start();
            }
            List<Future<KeyHistory>> running = new ArrayList<>();
            for (int i = 0; i < settings.exchanges(); i++) {
                int index = i;
                running.add(pool.submit(() -> exchange(index, null)));
            }
            int tenth = Math.max(1, settings.exchanges() / 10);
            for (Future<KeyHistory> exchange : running) {
                histories.add(exchange.get());
                if (histories.size() % tenth == 0) {
                    System.out.printf("Torture: %d of %d exchanges, %d s%n", histories.size(),
                            settings.exchanges(), Duration.ofNanos(System.nanoTime() - started).toSeconds());
                }
                if (settings.restart() && !restarted && finished.get() >= settings.exchanges() / 2) {
                    restarted = true;
                    gatewayUp = new CountDownLatch(1);
                    gateway.close();
                    startGateway();
                    gatewayUp.countDown();
                }
            }
        } catch (Exception | Error e) {
            pool.shutdownNow();
            throw e;
        }
        if (nemesis != null) {
            awaitServing();
        }
        List<Scenario> designed = designed();
        try {
            List<Future<KeyHistory>> closing = new ArrayList<>();
            for (int i = 0; i < designed.size(); i++) {
                int index = settings.exchanges() + i;
                Scenario scenario = designed.get(i);
                closing.add(pool.submit(() -> exchange(index, scenario)));
            }
            for (Future<KeyHistory> exchange : closing) {
                histories.add(exchange.get());
            }
        } finally {
            pool.shutdownNow();
        }
        Duration ran = Duration.ofNanos(System.nanoTime() - started);
        long settleStarted = System.nanoTime();
        Map<String, RecordView> records = settle(histories);
        Duration settling = Duration.ofNanos(System.nanoTime() - settleStarted);
        Map<String, Instant> lostInFailover = nemesis == null ? Map.of()
                : lostInFailover(histories, nemesis.lossWindows());
        Set<String> exempt = new HashSet<>(forgotten);
        exempt.addAll(lostInFailover.keySet());
        List<String> notes = new ArrayList<>();
        notes.add("Designed exchanges after the random ones: " + designed.size() + " of " + DESIGNED.size()
                + (designed.size() < DESIGNED.size() ? " (the others' faults or routes are not picked)" : ""));
        long followUpStarted = System.nanoTime();
        List<KeyHistory> unlookedUp = awaitFollowUps(histories, records, exempt,
                h -> h.route().reconciles() && isState(records.get(h.key()), "UNCERTAIN"));
        notes.add(String.format("Lookups: waited %d ms for the reconciling routes' UNCERTAIN records: %s",
                Duration.ofNanos(System.nanoTime() - followUpStarted).toMillis(), unlookedUp.isEmpty()
                        ? "none left" : unlookedUp.size() + " left after " + FOLLOW_UP_DEADLINE.toSeconds()
                        + " s, e.g. " + unlookedUp.get(0).key()));
        upstream.endProcesses();
        followUpStarted = System.nanoTime();
        List<KeyHistory> unended = awaitFollowUps(histories, records, exempt, h -> h.route() == RouteKind.PROCESS
                && records.get(h.key()) != null && "PENDING".equals(records.get(h.key()).processState()));
        notes.add(String.format("Processes: ended at the upstream, then waited %d ms for their records: %s",
                Duration.ofNanos(System.nanoTime() - followUpStarted).toMillis(), unended.isEmpty()
                        ? "none left pending" : unended.size() + " still pending after "
                        + FOLLOW_UP_DEADLINE.toSeconds() + " s, e.g. " + unended.get(0).key()));

        // Settlements before receipts: every request the upstream took before a settlement is among the receipts.
        Map<String, List<ReconcilerAuditLog.Settlement>> settlements = reconciled.settlements().stream()
                .collect(Collectors.groupingBy(ReconcilerAuditLog.Settlement::scopeHash));
        Map<String, List<RecordingUpstream.Lookup>> lookups = upstream.lookups().stream()
                .collect(Collectors.groupingBy(RecordingUpstream.Lookup::key));
        Map<String, List<Receipt>> receipts = upstream.receipts().stream()
                .filter(r -> r.key != null).collect(Collectors.groupingBy(r -> r.key));
        Map<String, List<RecordingUpstream.Drop>> drops = upstream.drops().stream()
                .filter(d -> d.key() != null).collect(Collectors.groupingBy(RecordingUpstream.Drop::key));
        Map<String, RecordingUpstream.Process> processes = upstream.processes();
        InvariantChecker checker = new InvariantChecker(settings.storeFaulted());
        for (KeyHistory history : histories) {
            List<Receipt> received = receipts.getOrDefault(history.key(), List.of());
            List<RecordingUpstream.Drop> dropped = drops.getOrDefault(history.key(), List.of());
            RecordView record = records.get(history.key());
            checker.check(history, record, received, dropped, exempt.contains(history.key()),
                    lostInFailover.get(history.key()));
            checker.checkReconciliation(history, record, received, dropped,
                    lookups.getOrDefault(history.key(), List.of()),
                    settlements.getOrDefault(scope(history).hash(), List.of()), RECONCILE_AFTER);
            if (history.route() == RouteKind.PROCESS) {
                checker.checkProcess(history, record, processes, exempt.contains(history.key()));
            }
        }
        checker.checkPolls(upstream.polls());
        checker.checkGauge(inFlightGauge());
        String store = "";
        if (nemesis != null) {
            Map<String, KeyHistory> byScope = histories.stream()
                    .collect(Collectors.toMap(h -> scope(h).hash(), h -> h));
            for (String[] event : notOwner.events()) {
                KeyHistory history = byScope.get(event[0]);
                checker.checkNotOwner(event[0], history == null ? null : history.route(), event[1],
                        history == null ? null : records.get(history.key()),
                        history != null && exempt.contains(history.key()));
            }
            replayAcknowledged(histories, receipts, exempt, checker);
            for (KeyHistory history : histories) {
                checker.checkAnswerBound(history, answerBound());
            }
            store = "Store faults (" + settings.topology().label + "): " + nemesis.summary() + "\n  store-timeout "
                    + STORE_TIMEOUT.toMillis() + " ms, answer bound " + answerBound().toMillis() + " ms; keys exempt: "
                    + forgotten.size() + " erased by a forgetting restart, " + lostInFailover.size()
                    + " under way in a lossy failover's window (" + nemesis.lossWindows().size() + " windows, from "
                    + REPLICATION_WINDOW.toMillis() + " ms before each); store-not-owner events: "
                    + notOwner.events().size() + " logged, "
                    + (long) gateway.getBean(IdempotencyEvents.class).count("store-not-owner") + " counted\n";
        }
        List<Receipt> received = upstream.receipts().stream()
                .filter(r -> r.key == null || !r.key.startsWith(HEALED_PROBE)).toList();
        long found = upstream.lookups().stream().filter(l -> l.status() == RecordingUpstream.FOUND_STATUS).count();
        long refused = upstream.lookups().stream()
                .filter(l -> l.status() == RecordingUpstream.UNAUTHORIZED_STATUS).count();
        long completed = reconciled.settlements().stream().filter(ReconcilerAuditLog.Settlement::completed).count();
        store += "Reconciliation (reconcile-after " + RECONCILE_AFTER.toMillis() + " ms): " + upstream.lookups().size()
                + " lookups (" + found + " found, " + refused + " refused 401), " + completed
                + " records completed and " + (reconciled.settlements().size() - completed) + " released by them; "
                + upstream.drops().size() + " requests dropped unread\n";
        long ended = processes.values().stream().filter(p -> p.reportedEnd != null).count();
        store += "Processes: " + processes.size() + " begun by 202s, " + upstream.polls().size() + " status polls, "
                + ended + " reported ended\n";
        store += String.join("\n", notes) + "\n";
        return new TortureReport(settings, histories, records, received, checker, ran, settling, restarted, store,
                designedRoutes(designed));
    }

    /** The designed scenarios whose route and faults the settings pick. */
    private List<Scenario> designed() {
        return DESIGNED.stream().filter(d -> settings.routes().contains(d.route())
                && settings.clientFaults().contains(d.fault()) && settings.upstreamFaults().contains(d.upstream()))
                .toList();
    }

    /** The route kinds whose designed scenarios all ran: their key invariants must have been exercised. */
    private static List<RouteKind> designedRoutes(List<Scenario> ran) {
        return Arrays.stream(RouteKind.values()).filter(route -> DESIGNED.stream()
                .filter(d -> d.route() == route).allMatch(ran::contains)).toList();
    }

    /**
     * Re-reads, at most until {@link #FOLLOW_UP_DEADLINE}, the records of the keys still {@code waiting} (exempt keys
     * aside: Redis may have forgotten what would settle them) until none is; {@code records} is updated in place.
     *
     * @return the keys still waiting at the deadline
     */
    private List<KeyHistory> awaitFollowUps(List<KeyHistory> histories, Map<String, RecordView> records,
            Set<String> exempt, Predicate<KeyHistory> waiting) throws InterruptedException {
        long deadline = System.nanoTime() + FOLLOW_UP_DEADLINE.toNanos();
        while (true) {
            List<KeyHistory> left = histories.stream().filter(h -> !exempt.contains(h.key())).filter(waiting)
                    .toList();
            if (left.isEmpty() || System.nanoTime() > deadline) {
                return left;
            }
            Thread.sleep(100); // a bounded poll: the loop ends on the condition or the deadline
            left.forEach(h -> records.remove(h.key()));
            records.putAll(fetch(left));
        }
    }

    private static boolean isState(RecordView record, String state) {
        return record != null && state.equals(record.state());
    }

    /**
     * Once the faults ended: a clean retry for every key whose write the upstream acknowledged (answered 201 in
     * whole), with the body it received. It must replay exactly what the upstream answered.
     */
    private void replayAcknowledged(List<KeyHistory> histories, Map<String, List<Receipt>> receipts,
            Set<String> exempt, InvariantChecker checker) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(settings.threads());
        try {
            List<Future<Runnable>> checks = new ArrayList<>();
            for (KeyHistory history : histories) {
                List<Receipt> acknowledged = receipts.getOrDefault(history.key(), List.of()).stream()
                        .filter(Receipt::acknowledged).toList();
                if (acknowledged.isEmpty() || exempt.contains(history.key())) {
                    continue;
                }
                Receipt receipt = acknowledged.get(0);
                checks.add(pool.submit(() -> {
                    Attempt retry = client.send(history.route(), history.key(), receipt.body, ClientFault.CLEAN,
                            new Random(settings.seed() + receipt.id));
                    return () -> checker.checkReplay(history.key(), receipt, retry);
                }));
            }
            for (Future<Runnable> check : checks) {
                check.get().run();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The keys a lossy failover may have made Redis forget a write of: those whose exchange was under way at some
     * moment from {@link #REPLICATION_WINDOW} before the failover began until the gateway could no longer write to
     * the old master (it was dead or a replica, or the gateway had left it for the new one).
     */
    private Map<String, Instant> lostInFailover(List<KeyHistory> histories, List<StoreNemesis.LossWindow> windows) {
        Map<String, Instant> lost = new HashMap<>();
        for (KeyHistory history : histories) {
            long ended = endedNanos.getOrDefault(history.key(), Long.MAX_VALUE);
            for (StoreNemesis.LossWindow window : windows) {
                if (history.startedNanos() <= window.untilNanos()
                        && ended >= window.fromNanos() - REPLICATION_WINDOW.toNanos()) {
                    lost.merge(history.key(), window.until(), (a, b) -> a.isAfter(b) ? a : b);
                }
            }
        }
        return lost;
    }

    /**
     * After the last store fault: fresh keys until 20 in a row are answered 201 (the gateway reconnects, and follows
     * new masters, by itself, within a bounded minute), so that the records are read, and the acknowledged writes
     * replayed, through a gateway that reaches Redis again.
     */
    private void awaitServing() {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        Random random = new Random(settings.seed());
        int inARow = 0;
        for (int i = 0; inARow < 20; i++) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("The gateway did not serve again within a minute of the last failover");
            }
            String key = String.format(HEALED_PROBE + "%016x-%05d", settings.seed(), i);
            Attempt probe = client.send(RouteKind.ONBOARDING, key, body(key, 0, random), ClientFault.CLEAN, random);
            inARow = probe.status() == 201 ? inARow + 1 : 0;
        }
    }

    /**
     * Just before Redis forgets: the keys with a record in Redis and those under way lose what they stored. (Read
     * around the proxy; the keys begun between this and the kill are noted by {@link #noteRunning} after it.)
     */
    private void noteForgotten() {
        noteRunning();
        try {
            for (String name : LocalRedisCluster.cli(storeRedis.port(), "--scan", "--pattern", "idempotency:{*}")
                    .split("\\s+")) {
                if (name.startsWith("idempotency:{") && name.endsWith("}")) {
                    String key = keysByScope.get(name.substring("idempotency:{".length(), name.length() - 1));
                    if (key != null) {
                        forgotten.add(key);
                    }
                }
            }
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException("Could not list the records Redis is about to forget", e);
        }
    }

    /**
     * The keys under way, and those whose client had its answer so recently that a store call of theirs may still
     * be going on: past the settle deadline the client is answered and the call continues (the complete's retries
     * take up to ~8 s), so a record can be written after the scan of {@link #noteForgotten} and be erased with the
     * rest (the 100,000-exchange run found two such keys "replayed" as fresh writes).
     */
    private void noteRunning() {
        forgotten.addAll(running);
        long since = System.nanoTime() - STORE_CALLS_OUTLIVE_ANSWER.toNanos();
        endedNanos.forEach((key, ended) -> {
            if (ended - since > 0) {
                forgotten.add(key);
            }
        });
    }

    /**
     * One exchange: its route and faults drawn from the seed (the route first, then the faults its upstream may be
     * told), or {@code designed}; then its requests.
     */
    private KeyHistory exchange(int index, Scenario designed) throws InterruptedException {
        gatewayUp.await();
        long started = System.nanoTime();
        Random random = new Random(settings.seed() * 1_000_003L + index);
        // Not the first draw of that Random: those of neighbouring seeds are too alike to spread over four routes.
        RouteKind route = designed != null ? designed.route() : settings.routes().get(
                new SplittableRandom(settings.seed() * 1_000_003L + index).nextInt(settings.routes().size()));
        String key = String.format("torture-%016x-%07d", settings.seed(), index);
        keysByScope.put(scope(key, route).hash(), key);
        running.add(key);
        try {
            ClientFault fault = designed != null ? designed.fault() : pick(settings.clientFaults(), random);
            List<UpstreamFault> allowed = settings.upstreamFaults().stream().filter(route::allows).toList();
            UpstreamFault answer = designed != null ? designed.upstream()
                    : allowed.isEmpty() ? UpstreamFault.NORMAL
                    : allowed.contains(UpstreamFault.NORMAL) && random.nextBoolean() ? UpstreamFault.NORMAL
                    : pick(allowed, random);
            upstream.answer(key, answer);
            if (route == RouteKind.PROCESS) {
                upstream.plan(key, new RecordingUpstream.ProcessPlan(random.nextInt(4),
                        random.nextInt(4) == 0 ? "FAILED" : "COMPLETED"));
            }
            byte[] body = body(key, 0, random);
            List<Attempt> attempts = new ArrayList<>();
            if (fault == ClientFault.DUPLICATES_SAME_BODY || fault == ClientFault.DUPLICATES_DIFFERENT_BODIES) {
                attempts.addAll(duplicates(route, key, body, fault, random));
            } else {
                attempts.add(client.send(route, key, body, fault, random));
            }
            if (random.nextBoolean()) {
                attempts.add(client.send(route, key, body, ClientFault.CLEAN, random)); // the client's correct retry
            }
            return new KeyHistory(key, route, fault, answer, attempts, started);
        } finally {
            running.remove(key);
            endedNanos.put(key, System.nanoTime());
            finished.incrementAndGet();
        }
    }

    /** Two or three clients at once with the same key, on threads of their own so they really overlap. */
    private List<Attempt> duplicates(RouteKind route, String key, byte[] body, ClientFault fault, Random random) {
        int count = 2 + random.nextInt(2);
        List<Attempt> attempts = Collections.synchronizedList(new ArrayList<>());
        List<Thread> clients = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] own = fault == ClientFault.DUPLICATES_DIFFERENT_BODIES && i > 0 ? body(key, i, random) : body;
            Random ownRandom = new Random(random.nextLong());
            clients.add(new Thread(() -> attempts.add(client.send(route, key, own, ClientFault.CLEAN, ownRandom)
                    .relabeled(fault)), "torture-duplicate"));
        }
        clients.forEach(Thread::start);
        for (Thread duplicate : clients) {
            try {
                duplicate.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return new ArrayList<>(attempts);
    }

    private static <T> T pick(List<T> choices, Random random) {
        return choices.get(random.nextInt(choices.size()));
    }

    private static byte[] body(String key, int variant, Random random) {
        return HttpMessage.ascii("{\"order\":\"" + key + "\",\"variant\":" + variant + ",\"pad\":\""
                + "x".repeat(random.nextInt(400)) + "\"}");
    }

    /**
     * Polls the records until none is IN_FLIGHT and the in-flight gauge reads 0, for at most lease + response
     * timeout + slack: what is still IN_FLIGHT then breaks invariant 4.
     */
    private Map<String, RecordView> settle(List<KeyHistory> histories) throws InterruptedException {
        long deadline = System.nanoTime() + LEASE.plus(RESPONSE_TIMEOUT).plus(SETTLE_SLACK).toNanos();
        Map<String, RecordView> records = new HashMap<>(fetch(histories));
        while (true) {
            Set<String> inFlight = records.entrySet().stream()
                    .filter(e -> "IN_FLIGHT".equals(e.getValue().state())).map(Map.Entry::getKey)
                    .collect(Collectors.toSet());
            if ((inFlight.isEmpty() && inFlightGauge() == 0) || System.nanoTime() > deadline) {
                return records;
            }
            Thread.sleep(100); // a bounded poll: the loop ends on the condition or the deadline
            inFlight.forEach(records::remove);
            records.putAll(fetch(histories.stream().filter(h -> inFlight.contains(h.key())).toList()));
        }
    }

    private Map<String, RecordView> fetch(List<KeyHistory> keys) {
        RecordInspector inspector = gateway.getBean(RecordInspector.class);
        return Flux.fromIterable(keys)
                .flatMap(history -> inspector.find(scope(history).hash(), true)
                        .map(view -> Map.entry(history.key(), view)), 32)
                .collectMap(Map.Entry::getKey, Map.Entry::getValue).block(Duration.ofMinutes(5));
    }

    static IdempotencyScope scope(KeyHistory history) {
        return scope(history.key(), history.route());
    }

    static IdempotencyScope scope(String key, RouteKind route) {
        return new IdempotencyScope("", route.routeId, new IdempotencyKey(key));
    }

    private double inFlightGauge() {
        return gateway.getBean(MeterRegistry.class).find(IdempotencyMetrics.IN_FLIGHT).gauges().stream()
                .mapToDouble(Gauge::value).sum();
    }

    @Override
    public void close() throws Exception {
        Gateways.closeAll(gateway, upstream, redis == null ? null : redis::stop, proxy, storeRedis, failovers);
    }
}
