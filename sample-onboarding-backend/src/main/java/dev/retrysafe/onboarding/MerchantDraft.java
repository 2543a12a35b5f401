package dev.retrysafe.onboarding;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

/**
 * A merchant as sent in a POST or PUT body. It is only checked when the write is processed, like a legacy
 * system that validates in its back office: a bad draft is still answered 202 and its process ends FAILED.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record MerchantDraft(
        String legalName,
        String taxId,
        String email,
        List<Object> integrations,
        List<Object> paymentMethods,
        List<Object> sites,
        Map<String, Object> settings) {

    private static final Pattern TAX_ID = Pattern.compile("[A-Za-z0-9]{8,15}");

    /** Why this draft cannot become a merchant; empty when it can. */
    List<String> problems() {
        List<String> reasons = new ArrayList<>();
        if (legalName == null || legalName.isBlank()) {
            reasons.add("legalName is required");
        }
        if (taxId == null || taxId.isBlank()) {
            reasons.add("taxId is required");
        }
        else if (!TAX_ID.matcher(taxId).matches()) {
            reasons.add("taxId must be 8-15 letters or digits");
        }
        if (email != null && !email.contains("@")) {
            reasons.add("email must be an e-mail address");
        }
        return reasons;
    }
}
