package dev.retrysafe.gateway.idempotency.scope;

import dev.retrysafe.gateway.idempotency.fingerprint.PartsDigest;
import dev.retrysafe.gateway.idempotency.key.IdempotencyKey;
import java.util.Base64;
import java.util.Objects;

/**
 * Where a key is unique: the same key sent by two tenants, or for two operations, names two different intents.
 * The operation is the route's {@code operation} arg, by default its id: a route renamed, split or moved that keeps
 * its operation keeps its records, and two routes naming one operation share them. The route id is carried for
 * metrics and operators only; it is not part of the scope.
 * Its hash is computed once: it names the Redis record and the wake-up message, and appears in logs.
 */
public final class IdempotencyScope {
    private final String tenant;
    private final String operation;
    private final String routeId;
    private final IdempotencyKey key;
    private final String hash;
    private final String tenantHash;

    /** On the route whose id is the operation (a route that does not name one). */
    public IdempotencyScope(String tenant, String operation, IdempotencyKey key) {
        this(tenant, operation, operation, key);
    }

    /**
     * @param tenant    who sent the request; {@code ""} for anonymous requests
     * @param operation the name that scopes records: the route's {@code operation} arg, else its id
     * @param routeId   the gateway route the request matched
     * @param key       the client's idempotency key
     */
    public IdempotencyScope(String tenant, String operation, String routeId, IdempotencyKey key) {
        this.tenant = Objects.requireNonNull(tenant, "tenant");
        this.operation = Objects.requireNonNull(operation, "operation");
        this.routeId = Objects.requireNonNull(routeId, "routeId");
        this.key = Objects.requireNonNull(key, "key");
        // The operation where the route id was before it existed: a route that names none hashes as it always did.
        byte[] digest = new PartsDigest().add(tenant).add(operation).add(key.value()).digest();
        this.hash = Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
        this.tenantHash = tenantHash(tenant);
    }

    public String tenant() {
        return tenant;
    }

    public String operation() {
        return operation;
    }

    /** The route the request matched: for metrics and operators, not part of the scope. */
    public String routeId() {
        return routeId;
    }

    public IdempotencyKey key() {
        return key;
    }

    /**
     * Base64url (no padding) SHA-256 of the length-prefixed tenant, operation and key: the only form of the scope
     * that may reach Redis key names, so Redis never holds the raw tenant or key.
     */
    public String hash() {
        return hash;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IdempotencyScope other && tenant.equals(other.tenant) && operation.equals(other.operation)
                && key.equals(other.key);
    }

    @Override
    public int hashCode() {
        return Objects.hash(tenant, operation, key);
    }

    /** SHA-256 of the tenant alone, base64url: lets operators list one tenant's records without storing it raw. */
    public String tenantHash() {
        return tenantHash;
    }

    public static String tenantHash(String tenant) {
        byte[] digest = new PartsDigest().add("tenant").add(tenant).digest();
        return Base64.getUrlEncoder().withoutPadding().encodeToString(digest).substring(0, 22);
    }

    /** Shows the hash only: the tenant and the key must never reach logs. */
    @Override
    public String toString() {
        return "IdempotencyScope[hash=" + hash + "]";
    }
}
