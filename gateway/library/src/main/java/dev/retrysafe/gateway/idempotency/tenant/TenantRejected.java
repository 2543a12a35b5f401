package dev.retrysafe.gateway.idempotency.tenant;

/**
 * The request names its tenant ambiguously, for instance in two different tenant headers. Joining or choosing one
 * would put the request in a scope nobody meant, so the filter refuses it (422) before anything is reserved. A
 * {@link TenantResolver} emits it as an error.
 */
public final class TenantRejected extends RuntimeException {
    private final String header;

    /** @param header the request header that named the tenant ambiguously */
    public TenantRejected(String header) {
        super("Ambiguous tenant in the " + header + " header");
        this.header = header;
    }

    public String header() {
        return header;
    }
}
