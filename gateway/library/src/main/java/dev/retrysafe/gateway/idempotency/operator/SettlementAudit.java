package dev.retrysafe.gateway.idempotency.operator;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit line of every settlement, by an operator or by the gateway itself (the reconciler):
 * {@code OPERATOR <who> <action> scope <hash> (was <state>): <reason>}, a WARN of the operator endpoint's logger, so
 * one log filter finds them all.
 */
public final class SettlementAudit {
    private static final Logger log = LoggerFactory.getLogger(IdempotencyOperatorEndpoint.class);

    private SettlementAudit() {
    }

    /** Everything but the action and the state is escaped onto one line: none of it can forge a log line. */
    public static void settled(String who, String action, String scopeHash, String previousState, String reason) {
        log.warn("OPERATOR {} {} scope {} (was {}): {}", LogText.oneLine(who), action, LogText.oneLine(scopeHash),
                previousState, LogText.oneLine(reason));
    }
}
