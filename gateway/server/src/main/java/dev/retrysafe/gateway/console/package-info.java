/**
 * The operator console: server-rendered pages on the management port (list, one record, its settlements) over the
 * library's operator API. No script, no template engine: HTML built and escaped in {@code ConsolePages}.
 * <p>
 * May import the library's operator, scope and key packages; nothing imports it but its management-context
 * configuration.
 */
package dev.retrysafe.gateway.console;
