package dev.retrysafe.gateway.idempotency.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyMetrics;
import dev.retrysafe.gateway.support.Gateways;
import dev.retrysafe.gateway.support.LocalRedisCluster;
import dev.retrysafe.gateway.support.LocalRedisServer;
import dev.retrysafe.gateway.support.TestRoutes;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * A Redis that can forget records is named, against real {@code redis-server}s started with the settings at hand:
 * an evicting {@code maxmemory-policy} stops the startup in one screen (unless accepted), is an ERROR and a health
 * detail when it appears later; no persistence is a WARN; a loss of Redis's memory (FLUSHALL, a restart without
 * persistence) is an ERROR once, a count and a health detail, and a fresh Redis is no loss. The checks run every
 * 200 ms here; the test waits on Redis's own count of CONFIG calls (one per check) to know a check has run.
 */
class RedisMemoryIntegrationTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    private final List<AutoCloseable> started = new ArrayList<>();
    /** Read under its own lock: the appender adds to its list while holding it (AppenderBase.doAppend). */
    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();

    {
        lines.setName("redis-memory-test");
    }

    @BeforeEach
    void captureLogs() {
        assumeTrue(LocalRedisCluster.available(), "redis-server and redis-cli on the PATH");
        lines.start();
    }

    /**
     * Boot resets the log configuration as each gateway starts (and stops it after a failed start): the capture is
     * started and attached again after that.
     */
    private ApplicationListener<ApplicationEnvironmentPreparedEvent> capture() {
        return event -> {
            lines.setContext(root().getLoggerContext());
            if (!lines.isStarted()) {
                lines.start();
            }
            if (root().getAppender(lines.getName()) == null) {
                root().addAppender(lines);
            }
        };
    }

    @AfterEach
    void stopAll() throws Exception {
        root().detachAppender(lines);
        lines.stop();
        for (int i = started.size() - 1; i >= 0; i--) {
            started.get(i).close();
        }
    }

    private static Logger root() {
        return (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    }

    @Test
    void anAllkeysLruRedisStopsTheStartupWithTheFix() throws Exception {
        LocalRedisServer redis = redis("--maxmemory-policy", "allkeys-lru");

        assertThatThrownBy(() -> gateway(redis, Map.of())).hasRootCauseInstanceOf(EvictingRedis.class);

        String screen = failureScreen();
        assertThat(screen).contains("Redis 127.0.0.1:" + redis.port() + ": maxmemory-policy allkeys-lru")
                .contains("CONFIG SET maxmemory-policy noeviction")
                .contains("parameter group")
                .contains("idempotency.store.allow-eviction=true")
                .contains("docs/operations/redis.md");
        assertThat(screen.lines().count()).isLessThan(25);
    }

    @Test
    void aVolatileLruRedisStopsTheStartupToo() throws Exception {
        LocalRedisServer redis = redis("--maxmemory-policy", "volatile-lru");

        assertThatThrownBy(() -> gateway(redis, Map.of())).hasRootCauseInstanceOf(EvictingRedis.class);
        assertThat(failureScreen()).contains("maxmemory-policy volatile-lru").contains("volatile-*");
    }

    @Test
    void anEvictingRedisAcceptedByTheOperatorStartsWithAWarning() throws Exception {
        LocalRedisServer redis = redis("--maxmemory-policy", "allkeys-lru");

        ConfigurableApplicationContext gateway = gateway(redis, Map.of("idempotency.store.allow-eviction", "true"));

        assertThat(messages(Level.WARN, "Redis evicts keys")).singleElement().asString()
                .contains("allkeys-lru").contains("idempotency.store.allow-eviction=true");
        assertThat(messages(Level.ERROR, "Redis")).isEmpty();
        assertThat(health(gateway).getDetails()).containsEntry("evictingMasters",
                Map.of("127.0.0.1:" + redis.port(), "allkeys-lru"));
        assertThat(evictingMasters(gateway)).as("accepted, still published: an alert may page on it").isEqualTo(1);
    }

    @Test
    void aNoEvictionRedisWithPersistenceStartsQuietly() throws Exception {
        LocalRedisServer redis = redis("--appendonly", "yes");

        ConfigurableApplicationContext gateway = gateway(redis, Map.of());
        awaitChecks(redis, 2);

        assertThat(watchLines(Level.WARN)).isEmpty();
        assertThat(health(gateway).getStatus()).isEqualTo(Status.UP);
        assertThat(health(gateway).getDetails()).doesNotContainKeys("evictingMasters", "memoryLosses");
    }

    @Test
    void aRedisWithoutPersistenceIsAWarningNamingWhatARestartForgets() throws Exception {
        LocalRedisServer redis = redis(); // --save '' --appendonly no, no replica

        gateway(redis, Map.of());

        assertThat(messages(Level.WARN, "in memory only")).singleElement().asString()
                .contains("127.0.0.1:" + redis.port()).contains("no AOF").contains("no RDB snapshots")
                .contains("no replica").contains("forgets every record");
    }

    @Test
    void aPolicyChangedWhileRunningIsAnErrorOnceAndShownInHealth() throws Exception {
        LocalRedisServer redis = redis("--appendonly", "yes");
        ConfigurableApplicationContext gateway = gateway(redis, Map.of());
        assertThat(evictingMasters(gateway)).isZero();

        LocalRedisCluster.cli(redis.port(), "config", "set", "maxmemory-policy", "allkeys-lfu");
        await(() -> !messages(Level.ERROR, "Redis evicts keys").isEmpty(), "the ERROR of the new policy");
        awaitChecks(redis, 2);

        assertThat(messages(Level.ERROR, "Redis evicts keys")).singleElement().asString()
                .contains("allkeys-lfu").contains("CONFIG SET maxmemory-policy noeviction");
        Health health = health(gateway);
        assertThat(health.getStatus()).isEqualTo(Status.UP);
        assertThat(health.getDetails()).containsEntry("evictingMasters",
                Map.of("127.0.0.1:" + redis.port(), "allkeys-lfu"));
        assertThat(evictingMasters(gateway)).isEqualTo(1);
    }

    @Test
    void aRedisDownAtStartupIsCheckedWhenItIsBack() throws Exception {
        LocalRedisServer redis = redis("--maxmemory-policy", "allkeys-lru");
        redis.close();

        ConfigurableApplicationContext gateway = gateway(redis, Map.of());
        assertThat(messages(Level.WARN, "Could not check at startup")).hasSize(1);

        redis.restart();
        await(() -> !messages(Level.ERROR, "Redis evicts keys").isEmpty(), "the ERROR once Redis is back");
        assertThat(health(gateway).getDetails()).containsKey("evictingMasters");
    }

    @Test
    void aFlushallIsAMemoryLossLoggedOnceCountedAndShownInHealth() throws Exception {
        LocalRedisServer redis = redis("--appendonly", "yes");
        ConfigurableApplicationContext gateway = gateway(redis, Map.of());

        LocalRedisCluster.cli(redis.port(), "flushall");
        await(() -> lost(gateway) == 1, "the loss counted");
        awaitChecks(redis, 2);

        assertThat(messages(Level.ERROR, "lost its memory")).singleElement().asString()
                .contains("127.0.0.1:" + redis.port()).contains("FLUSHALL");
        assertThat(lost(gateway)).isEqualTo(1);
        assertThat(health(gateway).getDetails()).containsEntry("memoryLosses", 1L).containsKey("lastMemoryLoss");
    }

    @Test
    void aRestartWithoutPersistenceIsAMemoryLoss() throws Exception {
        LocalRedisServer redis = redis();
        ConfigurableApplicationContext gateway = gateway(redis, Map.of());
        awaitChecks(redis, 1);

        redis.restart();
        await(() -> lost(gateway) == 1, "the loss counted");

        assertThat(messages(Level.ERROR, "lost its memory")).hasSize(1);
        assertThat(health(gateway).getDetails()).containsEntry("memoryLosses", 1L);
    }

    @Test
    void aFreshRedisAndTwoInstancesStartingOnItAreNoLoss() throws Exception {
        LocalRedisServer redis = redis("--appendonly", "yes");
        ConfigurableApplicationContext first = gateway(redis, Map.of());
        ConfigurableApplicationContext second = gateway(redis, Map.of());
        awaitChecks(redis, 4);

        assertThat(lost(first)).isZero();
        assertThat(lost(second)).isZero();
        assertThat(messages(Level.ERROR, "lost its memory")).isEmpty();
        assertThat(LocalRedisCluster.cli(redis.port(), "keys", "idempotency-memory:*").lines().count()).isEqualTo(1);
    }

    /** What docs/operations/redis.md says of a full noeviction Redis: writes refused with OOM, guarded requests 503. */
    @Test
    void aFullNoEvictionRedisIsAnswered503() throws Exception {
        LocalRedisServer redis = redis("--maxmemory", "4mb", "--appendonly", "yes");
        ConfigurableApplicationContext gateway = gateway(redis, Map.of());
        // One script may go past maxmemory (Redis checks before it starts): every write after it is refused with OOM.
        LocalRedisCluster.cli(redis.port(), "eval",
                "for i = 1, 60000 do redis.call('SET', 'filler:' .. i, string.rep('x', 100)) end", "0");
        assertThat(LocalRedisCluster.cli(redis.port(), "set", "probe", "1")).contains("OOM");

        WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + gateway.getEnvironment()
                        .getRequiredProperty("local.server.port")).responseTimeout(WAIT).build()
                .post().uri("/merchants/full").header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"legalName\":\"ACME\"}").exchange()
                .expectStatus().isEqualTo(503)
                .expectHeader().exists("Retry-After")
                .expectBody().jsonPath("$.status.reason").isEqualTo(503);
    }

    @Test
    void onAClusterEveryMasterIsChecked() throws Exception {
        LocalRedisCluster cluster = new LocalRedisCluster(3);
        started.add(cluster);
        int second = cluster.ports().get(1);
        LocalRedisCluster.cli(second, "config", "set", "maxmemory-policy", "volatile-ttl");

        assertThatThrownBy(() -> track(Gateways.start("http://127.0.0.1:" + TestRoutes.closedPort(),
                Map.of("spring.data.redis.cluster.nodes", cluster.nodes(), "idempotency.store-timeout", "5s"),
                capture())))
                .hasRootCauseInstanceOf(EvictingRedis.class);
        assertThat(failureScreen()).contains("127.0.0.1:" + second + ": maxmemory-policy volatile-ttl")
                .doesNotContain(cluster.ports().get(0) + ": maxmemory-policy");

        LocalRedisCluster.cli(second, "config", "set", "maxmemory-policy", "noeviction");
        Map<String, String> settings = new HashMap<>(Map.of("spring.data.redis.cluster.nodes", cluster.nodes(),
                "idempotency.store-timeout", "5s", "idempotency.store.check-interval", "200ms"));
        ConfigurableApplicationContext gateway = track(Gateways.start(
                "http://127.0.0.1:" + TestRoutes.closedPort(), settings, capture()));
        for (int port : cluster.ports()) {
            await(() -> !cliQuietly(port, "keys", "idempotency-memory:*").isBlank(), "a marker on master " + port);
        }
        int third = cluster.ports().get(2);
        LocalRedisCluster.cli(third, "flushall");
        await(() -> lost(gateway) == 1, "the loss on master " + third + " counted");
        assertThat(messages(Level.ERROR, "lost its memory")).singleElement().asString().contains(":" + third);
    }

    private LocalRedisServer redis(String... settings) throws Exception {
        LocalRedisServer redis = new LocalRedisServer("--port", settings);
        started.add(redis);
        return redis;
    }

    private ConfigurableApplicationContext gateway(LocalRedisServer redis, Map<String, String> more) {
        Map<String, String> settings = new HashMap<>(Map.of(
                "spring.data.redis.host", "127.0.0.1",
                "spring.data.redis.port", Integer.toString(redis.port()),
                // Shared two-core machines: a cold first call can take over the default second.
                "idempotency.store-timeout", "5s",
                "idempotency.store.check-interval", "200ms"));
        settings.putAll(more);
        return track(Gateways.start("http://127.0.0.1:" + TestRoutes.closedPort(), settings, capture()));
    }

    private ConfigurableApplicationContext track(ConfigurableApplicationContext gateway) {
        started.add(gateway);
        return gateway;
    }

    private static Health health(ConfigurableApplicationContext gateway) {
        return gateway.getBean(RedisStoreHealthIndicator.class).health().block(WAIT);
    }

    private static double evictingMasters(ConfigurableApplicationContext gateway) {
        return gateway.getBean(MeterRegistry.class).get(IdempotencyMetrics.STORE_EVICTING_MASTERS).gauge().value();
    }

    private static double lost(ConfigurableApplicationContext gateway) {
        return gateway.getBean(MeterRegistry.class).get(IdempotencyMetrics.STORE_MEMORY_LOST).counter().count();
    }

    /** Waits until {@code checks} more checks have started, so the one running now has ended. */
    private static void awaitChecks(LocalRedisServer redis, int checks) throws Exception {
        long target = configCalls(redis.port()) + checks + 1;
        await(() -> configCalls(redis.port()) >= target, checks + " more checks");
    }

    private static long configCalls(int port) {
        try {
            return LocalRedisCluster.commandStat(port, "config|get", "calls");
        } catch (Exception e) {
            return -1;
        }
    }

    private static String cliQuietly(int port, String... args) {
        try {
            return LocalRedisCluster.cli(port, args);
        } catch (Exception e) {
            return "";
        }
    }

    private List<String> watchLines(Level level) {
        synchronized (lines) {
            return lines.list.stream().filter(e -> e.getLevel() == level)
                    .filter(e -> e.getLoggerName().equals(RedisMemoryWatch.class.getName()))
                    .map(ILoggingEvent::getFormattedMessage).toList();
        }
    }

    private List<String> messages(Level level, String containing) {
        return watchLines(level).stream().filter(m -> m.contains(containing)).toList();
    }

    /** Spring Boot's "APPLICATION FAILED TO START" screen, as the failure analyzer wrote it. */
    private String failureScreen() {
        synchronized (lines) {
            return lines.list.stream().map(ILoggingEvent::getFormattedMessage)
                    .filter(m -> m.contains("APPLICATION FAILED TO START")).reduce((a, b) -> b).orElse("");
        }
    }

    private static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("Not within " + WAIT.toSeconds() + " s: " + what);
            }
            try {
                TimeUnit.MILLISECONDS.sleep(20); // a poll step, not a wait for something to happen
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
