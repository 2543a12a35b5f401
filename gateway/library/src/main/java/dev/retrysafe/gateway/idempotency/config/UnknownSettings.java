package dev.retrysafe.gateway.idempotency.config;

import java.util.List;
import java.util.stream.Collectors;

/** Thrown at startup when settings nobody reads were found; {@link SettingsFailureAnalyzer} prints it. */
public final class UnknownSettings extends IllegalStateException {
    private final List<UnknownSetting> settings;

    UnknownSettings(List<UnknownSetting> settings) {
        super("Unknown idempotency settings: " + settings.stream().map(UnknownSetting::describe)
                .collect(Collectors.joining("; ")));
        this.settings = List.copyOf(settings);
    }

    List<UnknownSetting> settings() {
        return settings;
    }
}
