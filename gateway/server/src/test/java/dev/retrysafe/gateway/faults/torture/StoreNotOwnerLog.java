package dev.retrysafe.gateway.faults.torture;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import dev.retrysafe.gateway.idempotency.observability.IdempotencyEvents;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.LoggerFactory;

/**
 * The scopes of the gateway's {@code store-not-owner} events, from its WARN lines (the metric is counted by route
 * only): each must be explained by another party having settled the record. Attached after each gateway start,
 * since Spring Boot resets Logback when it starts.
 */
final class StoreNotOwnerLog extends AppenderBase<ILoggingEvent> {
    private static final Pattern SCOPE = Pattern.compile("(.*) for scope (\\S+): the record is no longer");
    /** What the gateway did not store, per line: scope hash, then what ("Response (status 201) not stored"). */
    private final List<String[]> seen = new ArrayList<>();

    void attach() {
        Logger events = (Logger) LoggerFactory.getLogger(IdempotencyEvents.class);
        events.detachAppender(this);
        if (!isStarted()) {
            start();
        }
        events.addAppender(this);
    }

    @Override
    protected synchronized void append(ILoggingEvent event) {
        Matcher matcher = SCOPE.matcher(event.getFormattedMessage());
        if (matcher.find()) {
            seen.add(new String[] {matcher.group(2), matcher.group(1)});
        }
    }

    /** Scope hash and what was refused, one entry per event. */
    synchronized List<String[]> events() {
        return List.copyOf(seen);
    }
}
