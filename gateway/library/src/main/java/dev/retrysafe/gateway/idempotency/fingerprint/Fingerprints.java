package dev.retrysafe.gateway.idempotency.fingerprint;

import java.util.Objects;

/**
 * A request's fingerprints as a record keeps them: under its route's rules, strict (the canonical form with no route
 * rule: no array sorted, no field ignored, no header), and the identity of the rules the first was taken under.
 *
 * @param rules the {@link FingerprintRules#id()}; {@code ""} for a record written before records kept them
 *              (format 1), whose strict fingerprint is unknown and given as its fingerprint
 */
public record Fingerprints(Fingerprint fingerprint, Fingerprint strict, String rules) {

    public Fingerprints {
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(strict, "strict");
        Objects.requireNonNull(rules, "rules");
    }

    /** A request on a route with no rule beside the canonical form: both fingerprints are one. */
    public static Fingerprints underNoRules(Fingerprint fingerprint) {
        return new Fingerprints(fingerprint, fingerprint, FingerprintRules.NONE.id());
    }

    /** What a record written before records kept their rules says of itself: its fingerprint only. */
    public static Fingerprints ofFormerRecord(Fingerprint fingerprint) {
        return new Fingerprints(fingerprint, fingerprint, "");
    }

    /**
     * Whether this request is the intent the {@code stored} record was made for. Under the same rules: the same
     * fingerprint, as always. Under others (a route changed, a fleet half rolled, two routes of one operation): the
     * same fingerprint still, or the same strict fingerprint, which no route rule affects. So a byte-identical retry
     * (up to the canonical form) is the same intent whatever either side's rules, and a retry that differs only in
     * what the rules forgive is judged as today. A record of unknown rules has only its fingerprint.
     */
    public boolean sameIntentAs(Fingerprints stored) {
        if (fingerprint.equals(stored.fingerprint)) {
            return true;
        }
        return rulesDifferFrom(stored) && strict.equals(stored.strict);
    }

    /** The stored record was fingerprinted under other rules than this request (and says which). */
    public boolean rulesDifferFrom(Fingerprints stored) {
        return !stored.rules.isEmpty() && !stored.rules.equals(rules);
    }
}
