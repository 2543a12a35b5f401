package dev.retrysafe.gateway;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The runnable gateway: Spring Cloud Gateway plus the Idempotency filter, routes from configuration. */
@SpringBootApplication
public class IdempotencyGatewayApplication {
    public static void main(String[] args) {
        SpringApplication.run(IdempotencyGatewayApplication.class, args);
    }
}
