/**
 * The runnable server around the filter library: its application class, the operator endpoint's security and the
 * management port kept on loopback unless configured.
 * <p>
 * May import the library; the library never imports it.
 */
package dev.retrysafe.gateway;
