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
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Set;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
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
 */
final class TortureRun implements AutoCloseable {
    static final String ROUTE_ID = "onboarding";
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
                "spring.cloud.gateway.server.webflux.routes[0].filters[0].args.reconcile-uri",
                RecordingUpstream.LOOKUP_PATH + "{key}",
                "spring.cloud.gateway.server.webflux.routes[0].filters[0].args.reconcile-after",
                RECONCILE_AFTER.toMillis() + "ms"));
        if (failovers != null) {
            properties.putAll(failovers.gatewayProperties());
        } else {
            properties.put("spring.data.redis.host", "127.0.0.1");
            properties.put("spring.data.redis.port", String.valueOf(proxy != null ? proxy.port() : redis.port()));
        }
        if (settings.storeFaulted()) {
            properties.put("idempotency.store-timeout", STORE_TIMEOUT.toMillis() + "ms");
        }
        gateway = Gateways.start("http://127.0.0.1:" + upstream.port(), properties);
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
                running.add(pool.submit(() -> exchange(index)));
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
        } finally {
            pool.shutdownNow();
        }
        if (nemesis != null) {
            awaitServing();
        }
        Duration ran = Duration.ofNanos(System.nanoTime() - started);
        long settleStarted = System.nanoTime();
        Map<String, RecordView> records = settle(histories);
        Duration settling = Duration.ofNanos(System.nanoTime() - settleStarted);

        // Settlements before receipts: every request the upstream took before a settlement is among the receipts.
        Map<String, List<ReconcilerAuditLog.Settlement>> settlements = reconciled.settlements().stream()
                .collect(Collectors.groupingBy(ReconcilerAuditLog.Settlement::scopeHash));
        Map<String, List<RecordingUpstream.Lookup>> lookups = upstream.lookups().stream()
                .collect(Collectors.groupingBy(RecordingUpstream.Lookup::key));
        Map<String, List<Receipt>> receipts = upstream.receipts().stream()
                .filter(r -> r.key != null).collect(Collectors.groupingBy(r -> r.key));
        InvariantChecker checker = new InvariantChecker(settings.storeFaulted());
        Map<String, Instant> lostInFailover = nemesis == null ? Map.of()
                : lostInFailover(histories, nemesis.lossWindows());
        Set<String> exempt = new HashSet<>(forgotten);
        exempt.addAll(lostInFailover.keySet());
        for (KeyHistory history : histories) {
            List<Receipt> received = receipts.getOrDefault(history.key(), List.of());
            checker.check(history, records.get(history.key()), received, exempt.contains(history.key()),
                    lostInFailover.get(history.key()));
            checker.checkReconciliation(history, records.get(history.key()), received,
                    lookups.getOrDefault(history.key(), List.of()),
                    settlements.getOrDefault(scope(history.key()).hash(), List.of()), RECONCILE_AFTER);
        }
        checker.checkGauge(inFlightGauge());
        String store = "";
        if (nemesis != null) {
            Map<String, KeyHistory> byScope = histories.stream()
                    .collect(Collectors.toMap(h -> scope(h.key()).hash(), h -> h));
            for (String[] event : notOwner.events()) {
                KeyHistory history = byScope.get(event[0]);
                checker.checkNotOwner(event[0], event[1], history == null ? null : records.get(history.key()),
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
        long completed = reconciled.settlements().stream().filter(ReconcilerAuditLog.Settlement::completed).count();
        store += "Reconciliation (reconcile-after " + RECONCILE_AFTER.toMillis() + " ms): " + upstream.lookups().size()
                + " lookups (" + found + " found), " + completed + " records completed and "
                + (reconciled.settlements().size() - completed) + " released by them\n";
        return new TortureReport(settings, histories, records, received, checker, ran, settling, restarted, store);
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
                        .filter(r -> r.answeredStatus == 201).toList();
                if (acknowledged.isEmpty() || exempt.contains(history.key())) {
                    continue;
                }
                Receipt receipt = acknowledged.get(0);
                checks.add(pool.submit(() -> {
                    Attempt retry = client.send(history.key(), receipt.body, ClientFault.CLEAN,
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
            Attempt probe = client.send(key, body(key, 0, random), ClientFault.CLEAN, random);
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

    private KeyHistory exchange(int index) throws InterruptedException {
        gatewayUp.await();
        long started = System.nanoTime();
        String key = String.format("torture-%016x-%07d", settings.seed(), index);
        keysByScope.put(scope(key).hash(), key);
        running.add(key);
        try {
            Random random = new Random(settings.seed() * 1_000_003L + index);
            ClientFault fault = pick(settings.clientFaults(), random);
            UpstreamFault answer = settings.upstreamFaults().contains(UpstreamFault.NORMAL) && random.nextBoolean()
                    ? UpstreamFault.NORMAL : pick(settings.upstreamFaults(), random);
            upstream.answer(key, answer);
            byte[] body = body(key, 0, random);
            List<Attempt> attempts = new ArrayList<>();
            if (fault == ClientFault.DUPLICATES_SAME_BODY || fault == ClientFault.DUPLICATES_DIFFERENT_BODIES) {
                attempts.addAll(duplicates(key, body, fault, random));
            } else {
                attempts.add(client.send(key, body, fault, random));
            }
            if (random.nextBoolean()) {
                attempts.add(client.send(key, body, ClientFault.CLEAN, random)); // the client's correct retry
            }
            return new KeyHistory(key, fault, answer, attempts, started);
        } finally {
            running.remove(key);
            endedNanos.put(key, System.nanoTime());
            finished.incrementAndGet();
        }
    }

    /** Two or three clients at once with the same key, on threads of their own so they really overlap. */
    private List<Attempt> duplicates(String key, byte[] body, ClientFault fault, Random random) {
        int count = 2 + random.nextInt(2);
        List<Attempt> attempts = Collections.synchronizedList(new ArrayList<>());
        List<Thread> clients = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] own = fault == ClientFault.DUPLICATES_DIFFERENT_BODIES && i > 0 ? body(key, i, random) : body;
            Random ownRandom = new Random(random.nextLong());
            clients.add(new Thread(() -> attempts.add(relabel(client.send(key, own, ClientFault.CLEAN, ownRandom),
                    fault)), "torture-duplicate"));
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

    private static Attempt relabel(Attempt a, ClientFault fault) {
        return new Attempt(a.key(), fault, a.body(), a.sentWhole(), a.status(), a.responseBody(), a.detail(),
                a.millis());
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
        Map<String, RecordView> records = new HashMap<>(fetch(histories.stream().map(KeyHistory::key).toList()));
        while (true) {
            List<String> inFlight = records.entrySet().stream()
                    .filter(e -> "IN_FLIGHT".equals(e.getValue().state())).map(Map.Entry::getKey).toList();
            if ((inFlight.isEmpty() && inFlightGauge() == 0) || System.nanoTime() > deadline) {
                return records;
            }
            Thread.sleep(100); // a bounded poll: the loop ends on the condition or the deadline
            inFlight.forEach(records::remove);
            records.putAll(fetch(inFlight));
        }
    }

    private Map<String, RecordView> fetch(List<String> keys) {
        RecordInspector inspector = gateway.getBean(RecordInspector.class);
        return Flux.fromIterable(keys)
                .flatMap(key -> inspector.find(scope(key).hash(), true)
                        .map(view -> Map.entry(key, view)), 32)
                .collectMap(Map.Entry::getKey, Map.Entry::getValue).block(Duration.ofMinutes(5));
    }

    static IdempotencyScope scope(String key) {
        return new IdempotencyScope("", ROUTE_ID, new IdempotencyKey(key));
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
