/**
 * The runnable server around the filter library: its application class, the operator endpoint's security, the
 * management port kept on loopback unless configured, and keep-alive connections that are always read again
 * (a Reactor Netty setting, {@code KeepAliveReadStall}).
 * <p>
 * May import the library; the library never imports it.
 */
package dev.retrysafe.gateway;
