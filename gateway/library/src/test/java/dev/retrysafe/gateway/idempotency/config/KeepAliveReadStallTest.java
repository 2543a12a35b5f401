package dev.retrysafe.gateway.idempotency.config;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.mock.env.MockEnvironment;

/** The system property Reactor Netty reads, set unless the application gave its own value. */
class KeepAliveReadStallTest {
    private String before;

    @BeforeEach
    void remember() {
        before = System.getProperty(KeepAliveReadStall.PROPERTY);
        System.clearProperty(KeepAliveReadStall.PROPERTY);
    }

    @AfterEach
    void restore() {
        if (before == null) {
            System.clearProperty(KeepAliveReadStall.PROPERTY);
        } else {
            System.setProperty(KeepAliveReadStall.PROPERTY, before);
        }
    }

    @Test
    void reactorNettyIsAskedToEndAnExchangeBeforeReadingTheNextRequest() {
        new KeepAliveReadStall().postProcessEnvironment(new MockEnvironment(), new SpringApplication());

        assertThat(System.getProperty(KeepAliveReadStall.PROPERTY)).isEqualTo("true");
    }

    @Test
    void aValueGivenOnTheCommandLineWins() {
        System.setProperty(KeepAliveReadStall.PROPERTY, "false");

        new KeepAliveReadStall().postProcessEnvironment(new MockEnvironment()
                .withProperty(KeepAliveReadStall.PROPERTY, "true"), new SpringApplication());

        assertThat(System.getProperty(KeepAliveReadStall.PROPERTY)).isEqualTo("false");
    }

    @Test
    void aValueInTheApplicationsConfigurationBecomesTheSystemProperty() {
        new KeepAliveReadStall().postProcessEnvironment(new MockEnvironment()
                .withProperty(KeepAliveReadStall.PROPERTY, "false"), new SpringApplication());

        assertThat(System.getProperty(KeepAliveReadStall.PROPERTY)).isEqualTo("false");
    }
}
