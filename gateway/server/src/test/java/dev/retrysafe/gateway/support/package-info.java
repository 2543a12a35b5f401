/**
 * Fixtures the server's integration tests share: a raw HTTP client that can hang up or send garbage at any byte,
 * socket-level upstreams that misbehave on cue, Redis processes (single, Cluster, Sentinel, with AUTH/TLS), links
 * that freeze or delay Redis, gateways started on them, and the routes they use.
 * <p>
 * Test packages import from here, never from each other.
 */
package dev.retrysafe.gateway.support;
