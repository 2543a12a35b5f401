package dev.retrysafe.gateway.faults.torture;

import dev.retrysafe.gateway.support.RedisFaultProxy;
import dev.retrysafe.gateway.support.RestartableRedis;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A thread that, from the run's seed, applies one random store fault after another while the exchanges run: a quiet
 * gap, then a fault for a while (each shorter than the in-flight lease, so a correct gateway can always settle within
 * a lease), until stopped. It logs what it did; around a forgetting restart it lets the run note which keys lose
 * their records. On a Sentinel or Cluster topology the faults are failovers ({@link Failovers}): each runs until the
 * new master takes writes and the old one is its replica, and the next waits until the replicas are in sync again;
 * a failover that may lose writes reports its window to the run.
 */
final class StoreNemesis implements AutoCloseable {
    /** One fault as applied: when it began (System.nanoTime) and how long it lasted. */
    record Applied(StoreFault fault, long startedNanos, Duration lasted) {
    }

    /**
     * From the moment a lossy failover began to the moment the gateway could no longer write to the old master (it
     * was dead, a replica, or left by the gateway) (System.nanoTime), and that end on the wall clock, to compare with
     * the records' times.
     */
    record LossWindow(long fromNanos, long untilNanos, Instant until) {
    }

    private final List<StoreFault> faults;
    private final RedisFaultProxy proxy;
    private final RestartableRedis redis;
    private final Failovers failovers;
    private final List<LossWindow> lossWindows = new ArrayList<>();
    private final Duration storeTimeout;
    private final Duration longest;
    private final Random random;
    private final List<Applied> applied = new ArrayList<>();
    private final Thread thread;
    private volatile boolean stopping;
    /** Cuts a fault's pause short when the run stops; the fault's own steps (a kill and its start) still run. */
    private final CountDownLatch stop = new CountDownLatch(1);
    private final Runnable beforeForgetting;
    private final Runnable afterForgetting;
    private volatile Throwable failure;
    private final long seed;
    /** The fault being applied, for a failure's message. */
    private volatile StoreFault underWay;

    /**
     * @param longest           the longest a fault lasts (below the in-flight lease)
     * @param beforeForgetting  runs just before Redis is killed to forget (the run notes what it will lose)
     * @param afterForgetting   runs just after the kill
     */
    StoreNemesis(long seed, List<StoreFault> faults, RedisFaultProxy proxy, RestartableRedis redis,
            Duration storeTimeout, Duration longest, Runnable beforeForgetting, Runnable afterForgetting) {
        this(seed, faults, proxy, redis, null, storeTimeout, longest, beforeForgetting, afterForgetting);
    }

    /** On a Sentinel or Cluster topology: failovers only. */
    StoreNemesis(long seed, List<StoreFault> faults, Failovers failovers) {
        this(seed, faults, null, null, failovers, Duration.ZERO, Duration.ZERO, () -> { }, () -> { });
    }

    private StoreNemesis(long seed, List<StoreFault> faults, RedisFaultProxy proxy, RestartableRedis redis,
            Failovers failovers, Duration storeTimeout, Duration longest, Runnable beforeForgetting,
            Runnable afterForgetting) {
        this.seed = seed;
        this.beforeForgetting = beforeForgetting;
        this.afterForgetting = afterForgetting;
        this.faults = faults;
        this.proxy = proxy;
        this.redis = redis;
        this.failovers = failovers;
        this.storeTimeout = storeTimeout;
        this.longest = longest;
        this.random = new Random(seed ^ 0x5EED_57_0BEL);
        thread = new Thread(this::loop, "store-nemesis");
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    private void loop() {
        try {
            while (!stopping) {
                pause(Duration.ofMillis(300 + random.nextInt(1200))); // a quiet gap: some exchanges run clean
                if (stopping) {
                    return;
                }
                StoreFault fault = nextFault();
                Duration lasted = Duration.ofMillis(150 + random.nextLong(Math.max(1, longest.toMillis() - 150)));
                long started = System.nanoTime();
                underWay = fault;
                apply(fault, lasted);
                underWay = null;
                synchronized (applied) {
                    applied.add(new Applied(fault, started, Duration.ofNanos(System.nanoTime() - started)));
                }
            }
        } catch (InterruptedException stopped) {
            Thread.currentThread().interrupt();
        } catch (Exception | AssertionError e) {
            failure = e;
        }
    }

    /**
     * At random; on a replicated Redis each kind of failover comes once before any comes again: a failover run meets
     * only a few, and should meet both a manual one and a SIGKILL.
     */
    private StoreFault nextFault() {
        if (failovers != null) {
            List<StoreFault> untried = faults.stream()
                    .filter(fault -> applied().stream().noneMatch(a -> a.fault() == fault)).toList();
            if (!untried.isEmpty()) {
                return untried.get(random.nextInt(untried.size()));
            }
        }
        return faults.get(random.nextInt(faults.size()));
    }

    private void apply(StoreFault fault, Duration lasted) throws Exception {
        switch (fault) {
            case DELAY -> {
                // Beyond store-timeout: from just over it to three times it.
                long delay = storeTimeout.toMillis() + 50 + random.nextLong(2 * storeTimeout.toMillis());
                proxy.delayReplies(Duration.ofMillis(delay), lasted);
                pause(lasted.plusMillis(delay));
            }
            case STALL -> {
                proxy.stall(lasted);
                pause(lasted);
            }
            case RESET -> proxy.resetAll(true);
            case CLOSE -> proxy.resetAll(false);
            case HALF_OPEN -> {
                proxy.halfOpen(lasted);
                pause(lasted);
            }
            case RESTART -> {
                redis.kill();
                pause(lasted);
                redis.start();
            }
            case RESTART_FORGETTING -> {
                beforeForgetting.run();
                redis.killAndForget();
                afterForgetting.run();
                pause(lasted);
                redis.start();
            }
            case FAILOVER -> {
                long from = System.nanoTime();
                failovers.failOver(random, () -> noteLoss(from));
                failovers.awaitReplicated();
            }
            case KILL_MASTER -> {
                failovers.killMaster(random, () -> noteLoss(System.nanoTime()), this::noteLoss);
                failovers.awaitReplicated();
            }
        }
    }

    private void noteLoss(long fromNanos) {
        synchronized (lossWindows) {
            lossWindows.add(new LossWindow(fromNanos, System.nanoTime(), Instant.now()));
        }
    }

    List<LossWindow> lossWindows() {
        synchronized (lossWindows) {
            return List.copyOf(lossWindows);
        }
    }

    /**
     * Fault injection: how long a fault lasts is the point, there is no condition to wait for; but a stop ends it at
     * once.
     */
    private void pause(Duration duration) throws InterruptedException {
        stop.await(duration.toMillis(), TimeUnit.MILLISECONDS);
    }

    List<Applied> applied() {
        synchronized (applied) {
            return List.copyOf(applied);
        }
    }

    /** Per fault: how many times, and for how long in all. */
    String summary() {
        Map<String, List<Applied>> byFault = applied().stream()
                .collect(Collectors.groupingBy(a -> a.fault().label, TreeMap::new, Collectors.toList()));
        return byFault.entrySet().stream().map(e -> e.getKey() + " x" + e.getValue().size() + " ("
                + e.getValue().stream().mapToLong(a -> a.lasted().toMillis()).sum() + " ms)")
                .collect(Collectors.joining(", "));
    }

    /**
     * Stops after the fault under way, heals the wire and makes sure Redis runs. A failover is let finish (cut short
     * it would leave a master down); it is bounded by its own waits.
     */
    @Override
    public void close() throws Exception {
        stopping = true;
        // Not an interrupt: one landing in a restart's kill (its wait for the process to end) left a dying Redis
        // that the start below took for a live one, and no Redis at all after it (CI, seed 473764608598).
        stop.countDown();
        thread.join((failovers == null ? Duration.ofSeconds(30) : Duration.ofMinutes(5)).toMillis());
        if (thread.isAlive()) {
            throw new IllegalStateException("The store nemesis did not stop within its bound, in "
                    + (underWay == null ? "a quiet gap" : underWay.label) + " after " + summary() + " (seed " + seed
                    + ")");
        }
        if (failovers == null) {
            proxy.heal();
            redis.start();
        }
        if (failure != null) {
            // The whole story on one line: a CI excerpt shows the top message of a test's error and nothing below.
            String during = underWay == null ? "a quiet gap" : underWay.label;
            throw new IllegalStateException("The store nemesis failed in " + during + " after " + summary()
                    + " (seed " + seed + "): " + failure, failure);
        }
    }
}
