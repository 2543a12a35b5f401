package dev.retrysafe.minimal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A platform team's configuration mistake, as it sees it when its gateway starts: one short screen naming the
 * setting, not pages of stack traces. Nothing here needs Redis: the startup stops before any request.
 */
@ExtendWith(OutputCaptureExtension.class)
class ConfigurationMistakesTest {
    static final String ROUTE = "--spring.cloud.gateway.server.webflux.routes[0].";

    @Test
    void aMisspeltPropertyStopsTheStartupNamingTheOneMeant(CapturedOutput output) {
        assertFailsToStart("--idempotency.key-min-lenght=20");
        assertThat(output.getOut() + output.getErr())
                .contains("APPLICATION FAILED TO START")
                .contains("idempotency.key-min-lenght")
                .contains("did you mean idempotency.key-min-length?");
        assertNoStackTrace(output);
    }

    @Test
    void aValueAgainstTheRulesStopsTheStartupNamingPropertyValueAndRule(CapturedOutput output) {
        assertFailsToStart("--idempotency.key-min-length=100", ROUTE + "id=onboarding",
                ROUTE + "uri=http://127.0.0.1:1", ROUTE + "predicates[0]=Path=/merchants/**",
                ROUTE + "filters[0].name=Idempotency");
        assertThat(output.getOut() + output.getErr())
                .contains("APPLICATION FAILED TO START")
                .contains("The Idempotency filter of route 'onboarding' cannot start")
                .contains("key-min-length (100) must not be more than key-max-length (64)")
                .contains("From the default: idempotency.key-min-length = 100 (\"idempotency.key-min-length\" from "
                        + "property source \"commandLineArgs\")");
        assertNoStackTrace(output);
    }

    private static void assertFailsToStart(String... args) {
        String[] all = Arrays.copyOf(args, args.length + 3);
        all[args.length] = "--server.port=0";
        all[args.length + 1] = "--spring.data.redis.port=1";
        all[args.length + 2] = "--spring.main.banner-mode=off";
        assertThatThrownBy(() -> SpringApplication.run(MinimalGatewayApplication.class, all).close())
                .isInstanceOf(RuntimeException.class);
    }

    private static void assertNoStackTrace(CapturedOutput output) {
        assertThat((output.getOut() + output.getErr()).lines().filter(line -> line.startsWith("\tat ")))
                .as("stack frames printed").isEmpty();
    }
}
