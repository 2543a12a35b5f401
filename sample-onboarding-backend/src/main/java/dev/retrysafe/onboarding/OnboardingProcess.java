package dev.retrysafe.onboarding;

import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * The state of one accepted write, as shown at {@code /processes/{processId}}: {@code merchantId} only once
 * COMPLETED, {@code reasons} only once FAILED.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record OnboardingProcess(String processId, Status status, String merchantId, List<String> reasons) {

    public enum Status { PENDING, COMPLETED, FAILED }

    static OnboardingProcess pending(String processId) {
        return new OnboardingProcess(processId, Status.PENDING, null, null);
    }

    static OnboardingProcess completed(String processId, String merchantId) {
        return new OnboardingProcess(processId, Status.COMPLETED, merchantId, null);
    }

    static OnboardingProcess failed(String processId, List<String> reasons) {
        return new OnboardingProcess(processId, Status.FAILED, null, List.copyOf(reasons));
    }
}
