/**
 * API-key tenants (profile apikeys): a key names its tenant, a request without one is refused in our error envelope.
 * <p>
 * May import the library's response package (the envelope) and the server's root package.
 */
package dev.retrysafe.gateway.apikey;
