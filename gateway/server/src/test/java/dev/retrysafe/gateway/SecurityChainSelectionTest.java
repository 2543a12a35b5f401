package dev.retrysafe.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.security.web.server.MatcherSecurityWebFilterChain;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.security.web.server.WebFilterChainProxy;
import org.springframework.security.web.server.firewall.StrictServerWebExchangeFirewall;
import org.springframework.security.web.server.util.matcher.ServerWebExchangeMatcher;
import org.springframework.security.web.server.util.matcher.ServerWebExchangeMatchers;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The fast way past Spring Security's chain selection decides nothing the proxy would decide otherwise: a request no
 * chain applies to goes on without the proxy but through its firewall; anything else is the proxy's.
 */
class SecurityChainSelectionTest {
    /** What the proxy decided, seen through its decorator: "none" (no chain applied) or "chain". */
    private final List<String> proxyDecided = new ArrayList<>();
    /** The requests that went on past security. */
    private final List<String> forwarded = new ArrayList<>();
    private final WebFilterChain rest = exchange -> {
        forwarded.add(exchange.getRequest().getPath().value());
        return Mono.empty();
    };

    @Test
    void aRequestNoChainAppliesToGoesOnWithoutTheProxy() {
        SecurityChainSelection selection = selection(
                chain(ServerWebExchangeMatchers.pathMatchers("/actuator", "/actuator/**"), denying()),
                chain(ServerWebExchangeMatchers.pathMatchers("/console/**"), denying()));

        selection.filter(post("/onboarding/merchants"), rest).block(Duration.ofSeconds(5));

        assertThat(forwarded).containsExactly("/onboarding/merchants");
        assertThat(proxyDecided).as("the proxy never asked").isEmpty();
    }

    @Test
    void aChainThatAppliesIsTheProxysToRun() {
        SecurityChainSelection selection = selection(
                chain(ServerWebExchangeMatchers.pathMatchers("/console/**"), denying()),
                chain(ServerWebExchangeMatchers.pathMatchers("/onboarding/**"), denying()));
        MockServerWebExchange exchange = post("/onboarding/merchants");

        selection.filter(exchange, rest).block(Duration.ofSeconds(5));

        assertThat(proxyDecided).containsExactly("chain");
        assertThat(exchange.getResponse().getStatusCode()).isEqualTo(HttpStatus.UNAUTHORIZED);
        assertThat(forwarded).as("the chain's filter answered").isEmpty();
    }

    @Test
    void aMatcherThatAnswersLaterLeavesTheDecisionToTheProxy() {
        ServerWebExchangeMatcher later = exchange -> Mono.delay(Duration.ofMillis(1))
                .then(ServerWebExchangeMatcher.MatchResult.notMatch());
        SecurityChainSelection selection = selection(chain(later, denying()));

        selection.filter(post("/onboarding/merchants"), rest).block(Duration.ofSeconds(5));

        assertThat(proxyDecided).as("the proxy waited for the answer: no chain").containsExactly("none");
        assertThat(forwarded).containsExactly("/onboarding/merchants");
    }

    @Test
    void aMatcherThatFailsFailsTheRequestAsTheProxyWould() {
        ServerWebExchangeMatcher failing = exchange -> Mono.error(new IllegalStateException("matcher broke"));
        SecurityChainSelection selection = selection(
                chain(ServerWebExchangeMatchers.pathMatchers("/console/**"), denying()), chain(failing, denying()));

        assertThatThrownBy(() -> selection.filter(post("/onboarding/merchants"), rest).block(Duration.ofSeconds(5)))
                .hasMessageContaining("matcher broke");
        assertThat(forwarded).isEmpty();
    }

    @Test
    void theFirewallStillRejectsWhatItRejectsOnTheWayPast() {
        SecurityChainSelection selection = selection(
                chain(ServerWebExchangeMatchers.pathMatchers("/console/**"), denying()));

        for (String path : List.of("/onboarding/merchants;jsessionid=x", "/onboarding/a%2Fb", "/onboarding/%2e%2e/actuator")) {
            MockServerWebExchange exchange = post(path);
            selection.filter(exchange, rest).block(Duration.ofSeconds(5));
            assertThat(exchange.getResponse().getStatusCode()).as(path).isEqualTo(HttpStatus.BAD_REQUEST);
            assertThat(exchange.getResponse().getBodyAsString().block(Duration.ofSeconds(5))).as(path)
                    .contains("\"reason\":400").contains(RefusedRequest.MESSAGE.substring(0, 20));
        }
        assertThat(forwarded).isEmpty();
        assertThat(proxyDecided).isEmpty();
    }

    @Test
    void itStandsWhereTheProxyStood() {
        assertThat(selection().getOrder()).isEqualTo(SecurityChainSelection.PROXY_ORDER).isEqualTo(-100);
    }

    private SecurityChainSelection selection(SecurityWebFilterChain... chains) {
        WebFilterChainProxy proxy = new WebFilterChainProxy(chains);
        WebFilterChainProxy.WebFilterChainDecorator defaults = new WebFilterChainProxy.DefaultWebFilterChainDecorator();
        proxy.setFilterChainDecorator(new WebFilterChainProxy.WebFilterChainDecorator() {
            @Override
            public WebFilterChain decorate(WebFilterChain original) {
                proxyDecided.add("none");
                return defaults.decorate(original);
            }

            @Override
            public WebFilterChain decorate(WebFilterChain original, List<WebFilter> filters) {
                proxyDecided.add("chain");
                return defaults.decorate(original, filters);
            }
        });
        return new SecurityChainSelection(proxy, List.of(chains), new StrictServerWebExchangeFirewall(),
                new RefusedRequest());
    }

    private static SecurityWebFilterChain chain(ServerWebExchangeMatcher matcher, WebFilter filter) {
        return new MatcherSecurityWebFilterChain(matcher, List.of(filter));
    }

    /** A chain's only filter: 401, and the request goes no further. */
    private static WebFilter denying() {
        return (exchange, chain) -> {
            exchange.getResponse().setStatusCode(HttpStatus.UNAUTHORIZED);
            return exchange.getResponse().setComplete();
        };
    }

    private static MockServerWebExchange post(String path) {
        return MockServerWebExchange.from(MockServerHttpRequest.post(path));
    }
}
