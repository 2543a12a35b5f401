package dev.retrysafe.onboarding;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Settings under {@code onboarding.*}.
 *
 * @param processingDelay how long a write stays PENDING before it completes or fails
 * @param retryAfter the polling hint sent as {@code Retry-After} (whole seconds) while a process is PENDING
 * @param writeLog a file to append one line per accepted write to ({@link WriteLog}); empty: none
 * @param lookupToken the bearer token {@code GET /processes/by-idempotency-key/{key}} requires (401 without it), as
 *        a real backend guards a lookup that reveals its writes; {@code onboarding-backend.properties} takes it from
 *        {@code ONBOARDING_LOOKUP_TOKEN}, with a development default the shipped gateway route sends too
 */
@ConfigurationProperties("onboarding")
public record OnboardingProperties(
        @DefaultValue("3s") Duration processingDelay,
        @DefaultValue("1s") Duration retryAfter,
        @DefaultValue("") String writeLog,
        @DefaultValue(OnboardingProperties.DEVELOPMENT_LOOKUP_TOKEN) String lookupToken) {

    /** For a local run only: the gateway's {@code config/application.yml} sends the same when none is set. */
    public static final String DEVELOPMENT_LOOKUP_TOKEN = "onboarding-dev-lookup-token";
}
