package dev.retrysafe.gateway;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.actuate.autoconfigure.web.ManagementContextConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurationExcludeFilter;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.context.TypeExcludeFilter;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.FilterType;

/**
 * The runnable gateway: Spring Cloud Gateway plus the Idempotency filter, routes from configuration.
 * <p>
 * {@code @SpringBootApplication}, written out for one more exclusion from its component scan: classes annotated
 * {@link ManagementContextConfiguration} (the operator console) belong to the management server's child context
 * alone, where Spring Boot imports them from their {@code .imports} file. Scanned into this context they would
 * serve the console on the gateway's own port.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@ComponentScan(excludeFilters = {
        @ComponentScan.Filter(type = FilterType.CUSTOM, classes = TypeExcludeFilter.class),
        @ComponentScan.Filter(type = FilterType.CUSTOM, classes = AutoConfigurationExcludeFilter.class),
        @ComponentScan.Filter(type = FilterType.ANNOTATION, classes = ManagementContextConfiguration.class)})
public class IdempotencyGatewayApplication {
    public static void main(String[] args) {
        SpringApplication.run(IdempotencyGatewayApplication.class, args);
    }
}
