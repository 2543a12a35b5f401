/**
 * The runnable server around the filter library: its application class, the operator endpoint's security, the
 * management port kept on loopback unless configured. Keep-alive connections that are always read again (a Reactor
 * Netty setting) come with the library, in its {@code config/KeepAliveReadStall}.
 * <p>
 * May import the library; the library never imports it.
 */
package dev.retrysafe.gateway;
