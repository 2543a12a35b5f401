/**
 * EncryptionKeys: AES-256-GCM for stored responses, by key id, with rotation.
 * <p>
 * Plain Java (JCA): imports nothing of ours.
 */
package dev.retrysafe.gateway.idempotency.encryption;
