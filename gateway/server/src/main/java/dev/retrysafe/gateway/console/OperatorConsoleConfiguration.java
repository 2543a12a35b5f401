package dev.retrysafe.gateway.console;

import dev.retrysafe.gateway.idempotency.operator.IdempotencyOperatorEndpoint;
import dev.retrysafe.gateway.idempotency.operator.RecordInspector;
import java.time.Clock;
import org.springframework.boot.actuate.autoconfigure.web.ManagementContextConfiguration;
import org.springframework.boot.actuate.autoconfigure.web.ManagementContextType;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * The operator console on the management server: only in its own child context (a management port of its own),
 * never on the gateway's port, and only where the operator API itself is exposed. Listed in
 * {@code META-INF/spring/...ManagementContextConfiguration.imports}; the application's component scan leaves it
 * out (see {@code IdempotencyGatewayApplication}). Its login is {@code OperatorSecurityConfiguration}'s.
 */
@ManagementContextConfiguration(value = ManagementContextType.CHILD, proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnBean({RecordInspector.class, IdempotencyOperatorEndpoint.class})
public class OperatorConsoleConfiguration {

    @Bean
    RouterFunction<ServerResponse> idempotencyOperatorConsole(RecordInspector inspector,
            IdempotencyOperatorEndpoint endpoint) {
        return new OperatorConsole(inspector, endpoint, new ConsolePages(ConsolePages.compiler()), Clock.systemUTC())
                .routes();
    }
}
