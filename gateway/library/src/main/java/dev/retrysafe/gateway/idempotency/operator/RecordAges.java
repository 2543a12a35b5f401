package dev.retrysafe.gateway.idempotency.operator;

import java.time.Duration;

/**
 * How long the oldest unsettled record of each kind has been so, cluster-wide, by the store's own clock (the gateway
 * instances' clocks may disagree with it and with each other); {@link Duration#ZERO} when there is none of that kind.
 *
 * @param inFlight       since the oldest IN_FLIGHT record was reserved (or retaken)
 * @param uncertain      since the oldest UNCERTAIN record became so
 * @param processPending since the oldest COMPLETED record whose process has not been seen ending was completed: its
 *                       202 stored
 */
public record RecordAges(Duration inFlight, Duration uncertain, Duration processPending) {
    public static final RecordAges NONE = new RecordAges(Duration.ZERO, Duration.ZERO, Duration.ZERO);
}
