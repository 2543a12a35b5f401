/**
 * The operator console: server-rendered pages on the management port (list, one record, its settlements) over the
 * library's operator API. No script. The markup is in Mustache templates ({@code templates/console/}, JMustache,
 * every value escaped); {@code ConsolePages} prepares what they show as {@code ConsoleViews} records.
 * <p>
 * May import the library's operator, scope and key packages; nothing imports it but its management-context
 * configuration.
 */
package dev.retrysafe.gateway.console;
