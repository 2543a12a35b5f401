package dev.retrysafe.loadtests.gatling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retrysafe.loadtests.gatling.LoadSettings.Profile;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Profiles size a run; an explicit knob overrides its profile; asserting latency or availability is opt-in. */
class LoadSettingsTest {

    private final Map<String, String> previous = new HashMap<>();

    @AfterEach
    void restoreProperties() {
        previous.forEach((name, value) -> {
            if (value == null) {
                System.clearProperty(name);
            } else {
                System.setProperty(name, value);
            }
        });
    }

    @Test
    void laptopIsTheDefaultProfile() {
        set("profile", null);
        set("smoke", null);
        set("users", null);

        LoadSettings settings = LoadSettings.load();

        assertThat(settings.profile).isEqualTo(Profile.LAPTOP);
        assertThat(settings.integer("users", 10, 4, 20, 2)).isEqualTo(10);
        assertThat(settings.describe("Sim", "10 users")).contains("[profile laptop]");
    }

    @Test
    void eachProfilePicksItsOwnValueAndAnExplicitKnobWins() {
        set("smoke", null);
        set("users", null);
        set("profile", "ci");
        assertThat(LoadSettings.load().integer("users", 10, 4, 20, 2)).isEqualTo(4);
        set("profile", "SOAK");
        assertThat(LoadSettings.load().integer("users", 10, 4, 20, 2)).isEqualTo(20);

        set("users", "7");
        assertThat(LoadSettings.load().integer("users", 10, 4, 20, 2)).isEqualTo(7);
    }

    @Test
    void smokeTrueIsTheSmokeProfileWhateverTheProfileSays() {
        set("profile", "soak");
        set("smoke", "true");
        set("users", null);

        LoadSettings settings = LoadSettings.load();

        assertThat(settings.profile).isEqualTo(Profile.SMOKE);
        assertThat(settings.integer("users", 10, 4, 20, 2)).isEqualTo(2);
    }

    @Test
    void anUnknownProfileIsRefusedWithTheChoices() {
        set("smoke", null);
        set("profile", "desktop");

        assertThatThrownBy(LoadSettings::load).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("desktop").hasMessageContaining("laptop, ci, soak, smoke");
    }

    @Test
    void latencyAndAvailabilityAreAssertedOnlyWhenGiven() {
        set("maxP99Millis", null);
        set("maxUnavailablePercent", null);
        assertThat(LoadSettings.load().maxP99Millis()).isEmpty();
        assertThat(LoadSettings.load().maxUnavailablePercent()).isEmpty();

        set("maxP99Millis", "1500");
        set("maxUnavailablePercent", "0.5");
        assertThat(LoadSettings.load().maxP99Millis()).hasValue(1500);
        assertThat(LoadSettings.load().maxUnavailablePercent()).hasValue(0.5);
    }

    @Test
    void oneBaseUrlGivesARelativePathAndSeveralRotateEachRequest() {
        set("baseUrls", null);
        set("baseUrl", "http://one:8080/");
        set("path", "/merchants");
        LoadSettings single = LoadSettings.load();
        assertThat(single.baseUrl).isEqualTo("http://one:8080");
        assertThat(single.target().apply(null)).isEqualTo("/merchants");

        set("baseUrls", "http://a:1, http://b:2/");
        set("rotationFile", null);
        LoadSettings several = LoadSettings.load();
        assertThat(several.baseUrl).isEqualTo("http://a:1");
        assertThat(List.of(several.target().apply(null), several.target().apply(null), several.target().apply(null)))
                .containsExactly("http://a:1/merchants", "http://b:2/merchants", "http://a:1/merchants");
        assertThat(several.describe("Sim", "x")).contains("http://a:1 | http://b:2/merchants");
    }

    private void set(String name, String value) {
        previous.putIfAbsent(name, System.getProperty(name));
        if (value == null) {
            System.clearProperty(name);
        } else {
            System.setProperty(name, value);
        }
    }
}
