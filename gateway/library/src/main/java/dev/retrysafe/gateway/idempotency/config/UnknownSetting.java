package dev.retrysafe.gateway.idempotency.config;

import java.util.Optional;

/**
 * A setting nobody reads: an {@code idempotency.*} property that is not one, or an arg the {@code Idempotency}
 * route filter does not have. Left alone it would be ignored and the default used, silently.
 *
 * @param name       as written
 * @param where      where it was written (file and line, or the property source), or the route it is on
 * @param suggestion the valid name closest to it, if one is close
 */
record UnknownSetting(String name, String where, Optional<String> suggestion) {

    String describe() {
        return name + " (" + where + ")" + suggestion.map(s -> ": did you mean " + s + "?").orElse("");
    }
}
