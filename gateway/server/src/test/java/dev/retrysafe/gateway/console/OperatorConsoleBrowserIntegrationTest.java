package dev.retrysafe.gateway.console;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.exactly;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.put;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.tomakehurst.wiremock.WireMockServer;
import dev.retrysafe.gateway.IdempotencyGatewayApplication;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import dev.retrysafe.gateway.idempotency.scope.IdempotencyScope;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * The operator console in a real browser (headless Chromium from the OS packages, driven by Selenium): an operator
 * signs in, finds the UNCERTAIN record a timed-out request left, opens it, releases it with a reason, and the
 * client's retry with the same key then reaches the upstream. Skipped where Chromium or chromedriver is missing
 * ({@code .ci/run} installs them). Writes a screenshot of the list to {@code target/operator-console.png}, or to
 * {@code -Dconsole.screenshot=<path>} (how docs/operations/operator-console.png is made), and one of the record's
 * page to {@code target/operator-console-record.png}.
 */
@SpringBootTest(classes = IdempotencyGatewayApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "idempotency.embedded-redis.enabled=true",
                "idempotency.embedded-redis.directory=target/embedded-redis",
                "spring.cloud.gateway.server.webflux.httpclient.response-timeout=800ms",
                "management.server.port=0",
                "management.endpoints.web.exposure.include=health,idempotency",
                "idempotency.operator.username=ops",
                "idempotency.operator.password=s3cret",
                "idempotency.tenant-header=X-Tenant-Id"})
@ExtendWith(OutputCaptureExtension.class)
class OperatorConsoleBrowserIntegrationTest {
    static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    static final Duration WAIT = Duration.ofSeconds(10);
    static final WireMockServer upstream = new WireMockServer(options().dynamicPort());

    static {
        upstream.start();
    }

    @LocalServerPort
    int port;
    @LocalManagementPort
    int managementPort;

    WebTestClient gateway;
    WebDriver browser;

    @BeforeAll
    static void browserInstalled() {
        for (Path needed : List.of(CHROMIUM, CHROMEDRIVER)) {
            if (!Files.isExecutable(needed)) {
                String why = "Skipping the operator console's browser test: " + needed
                        + " is missing (apt-get install chromium chromium-driver; .ci/run does)";
                System.out.println(why);
                Assumptions.abort(why);
            }
        }
    }

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        String prefix = "spring.cloud.gateway.server.webflux.routes[0].";
        registry.add(prefix + "id", () -> "onboarding");
        registry.add(prefix + "uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add(prefix + "predicates[0]", () -> "Path=/merchants/**");
        registry.add(prefix + "filters[0].name", () -> "Idempotency");
        String payouts = "spring.cloud.gateway.server.webflux.routes[1].";
        registry.add(payouts + "id", () -> "payouts");
        registry.add(payouts + "uri", () -> "http://127.0.0.1:" + upstream.port());
        registry.add(payouts + "predicates[0]", () -> "Path=/payouts/**");
        registry.add(payouts + "filters[0].name", () -> "Idempotency");
    }

    @AfterAll
    static void stopUpstream() {
        upstream.stop();
    }

    @BeforeEach
    void clients() {
        gateway = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port)
                .responseTimeout(Duration.ofSeconds(15)).build();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        // A laptop's screen; root in a container has no sandbox, and /dev/shm may be tiny there.
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,900",
                "--disable-gpu", "--no-first-run", "--disable-extensions");
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(CHROMEDRIVER.toFile()).usingAnyFreePort().build();
        browser = new ChromeDriver(service, options);
    }

    @AfterEach
    void closeBrowser() {
        if (browser != null) {
            browser.quit();
        }
    }

    /** Sends a request whose upstream answers too late: the gateway answers 504 and the record is UNCERTAIN. */
    String uncertain(String method, String path, String tenant) {
        String key = UUID.randomUUID().toString();
        upstream.stubFor((method.equals("PUT") ? put(urlEqualTo(path)) : post(urlEqualTo(path)))
                .willReturn(aResponse().withStatus(202).withFixedDelay(3000)));
        (method.equals("PUT") ? gateway.put() : gateway.post()).uri(path)
                .header("Idempotency-Key", key).header("X-Tenant-Id", tenant)
                .bodyValue("{\"legalName\":\"Acme GmbH\"}").exchange()
                .expectStatus().isEqualTo(504);
        return key;
    }

    @Test
    void anOperatorReleasesAnUncertainRecordInTheBrowserAndTheRetryGoesThrough(CapturedOutput output)
            throws IOException {
        String key = uncertain("POST", "/merchants/console-browser", "acme");
        String hash = new IdempotencyScope("header:acme", "onboarding", new IdempotencyKey(key)).hash();
        // Neighbours in the list, for a realistic screenshot: another tenant, another route.
        uncertain("PUT", "/merchants/m-7731/settings", "globex");
        uncertain("POST", "/payouts/batch-0427", "acme");

        String console = "http://127.0.0.1:" + managementPort + "/console";
        browser.get(console);
        WebDriverWait wait = new WebDriverWait(browser, WAIT);
        wait.until(ExpectedConditions.urlContains("/console/login"));
        browser.findElement(By.id("username")).sendKeys("ops");
        browser.findElement(By.id("password")).sendKeys("s3cret");
        browser.findElement(By.cssSelector("form button[type=submit]")).click();

        By row = By.cssSelector("tr.record[data-scope='" + hash + "']");
        WebElement record = wait.until(ExpectedConditions.visibilityOfElementLocated(row));
        assertThat(browser.findElement(By.id("user")).getText()).isEqualTo("ops");
        assertThat(record.getText()).contains("UNCERTAIN", "POST /merchants/console-browser")
                .contains("response timeout");
        assertThat(record.findElements(By.tagName("td")).get(2).getText()).isEqualTo("1");
        screenshot(Path.of(System.getProperty("console.screenshot", "target/operator-console.png")));

        record.findElement(By.tagName("a")).click();
        wait.until(ExpectedConditions.textToBe(By.id("state"), "UNCERTAIN"));
        assertThat(browser.findElement(By.id("record")).getText()).contains("onboarding",
                "POST /merchants/console-browser", IdempotencyScope.tenantHash("header:acme").substring(0, 12));
        screenshot(Path.of("target/operator-console-record.png"));
        WebElement release = browser.findElement(By.id("release"));
        release.findElement(By.name("reason")).sendKeys("backend ticket 42: no merchant was created");
        release.findElement(By.cssSelector("button[type=submit]")).click();

        wait.until(ExpectedConditions.urlContains("settled=release"));
        assertThat(browser.findElement(By.cssSelector(".notice")).getText()).contains("Released " + hash);
        assertThat(browser.findElements(row)).isEmpty();
        assertThat(output).contains("OPERATOR ops release scope " + hash
                + " (was UNCERTAIN): backend ticket 42: no merchant was created");

        upstream.stubFor(post(urlEqualTo("/merchants/console-browser"))
                .willReturn(aResponse().withStatus(202).withBody("created now")));
        gateway.post().uri("/merchants/console-browser").header("Idempotency-Key", key).header("X-Tenant-Id", "acme")
                .bodyValue("{\"legalName\":\"Acme GmbH\"}").exchange()
                .expectStatus().isEqualTo(202)
                .expectBody(String.class).isEqualTo("created now");
        upstream.verify(exactly(2), postRequestedFor(urlEqualTo("/merchants/console-browser")));
    }

    private void screenshot(Path target) throws IOException {
        File shot = ((ChromeDriver) browser).getScreenshotAs(OutputType.FILE);
        Files.createDirectories(target.toAbsolutePath().getParent());
        Files.copy(shot.toPath(), target, StandardCopyOption.REPLACE_EXISTING);
        System.out.println("Operator console screenshot: " + target.toAbsolutePath());
    }
}
