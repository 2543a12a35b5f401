package dev.retrysafe.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

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
    void theServerAsksReactorNettyToEndAnExchangeBeforeReadingTheNextRequest() {
        KeepAliveReadStall.avoid();

        assertThat(System.getProperty(KeepAliveReadStall.PROPERTY)).isEqualTo("true");
    }

    @Test
    void aValueGivenOnTheCommandLineWins() {
        System.setProperty(KeepAliveReadStall.PROPERTY, "false");

        KeepAliveReadStall.avoid();

        assertThat(System.getProperty(KeepAliveReadStall.PROPERTY)).isEqualTo("false");
    }
}
