package dev.retrysafe.gateway.faults.torture;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import dev.retrysafe.gateway.idempotency.operator.IdempotencyOperatorEndpoint;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.LoggerFactory;

/**
 * The reconciler's settlements, from the operators' audit lines ("OPERATOR reconciler complete scope ..."), each with
 * when it was logged: just after the settle ran in Redis. Attached after each gateway start, since Spring Boot resets
 * Logback when it starts.
 */
final class ReconcilerAuditLog extends AppenderBase<ILoggingEvent> {
    private static final Pattern SETTLED = Pattern.compile("^OPERATOR reconciler (complete|release) scope (\\S+) ");

    /** One settlement: {@code completed} (found) or released (not found), of the scope, at {@code System.nanoTime}. */
    record Settlement(String scopeHash, boolean completed, long atNanos) {
    }

    private final List<Settlement> seen = new ArrayList<>();

    void attach() {
        Logger audit = (Logger) LoggerFactory.getLogger(IdempotencyOperatorEndpoint.class);
        audit.detachAppender(this);
        if (!isStarted()) {
            start();
        }
        audit.addAppender(this);
    }

    @Override
    protected synchronized void append(ILoggingEvent event) {
        Matcher matcher = SETTLED.matcher(event.getFormattedMessage());
        if (matcher.find()) {
            seen.add(new Settlement(matcher.group(2), matcher.group(1).equals("complete"), System.nanoTime()));
        }
    }

    synchronized List<Settlement> settlements() {
        return List.copyOf(seen);
    }
}
