package dev.retrysafe.onboarding;

import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.annotation.JsonInclude;

/** A stored merchant: its id plus the fields of the draft that created or last updated it. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Merchant(
        String id,
        String legalName,
        String taxId,
        String email,
        List<Object> integrations,
        List<Object> paymentMethods,
        List<Object> sites,
        Map<String, Object> settings) {

    static Merchant of(String id, MerchantDraft draft) {
        return new Merchant(id, draft.legalName(), draft.taxId(), draft.email(), draft.integrations(),
                draft.paymentMethods(), draft.sites(), draft.settings());
    }
}
