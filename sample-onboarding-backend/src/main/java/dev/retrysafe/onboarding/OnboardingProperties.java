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
 */
@ConfigurationProperties("onboarding")
public record OnboardingProperties(
        @DefaultValue("3s") Duration processingDelay,
        @DefaultValue("1s") Duration retryAfter,
        @DefaultValue("") String writeLog) {
}
