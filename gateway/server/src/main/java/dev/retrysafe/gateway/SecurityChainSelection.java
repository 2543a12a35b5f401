package dev.retrysafe.gateway;

import java.util.List;
import org.reactivestreams.Subscription;
import org.springframework.core.Ordered;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.security.web.server.WebFilterChainProxy;
import org.springframework.security.web.server.firewall.ServerExchangeRejectedException;
import org.springframework.security.web.server.firewall.ServerExchangeRejectedHandler;
import org.springframework.security.web.server.firewall.ServerWebExchangeFirewall;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Mono;

/**
 * Spring Security's {@link WebFilterChainProxy} in front, with a cheaper way to find that no chain applies, which is
 * so for nearly every request the gateway proxies. The proxy picks a chain with {@code Flux.filterWhen}, which
 * allocates a 256-slot buffer per request and clears it slot by slot; the profile of the plain route put that at about
 * 15 us of CPU per request, before the proxy's observation of the "unsecured request". Here each chain's matcher is
 * asked in the proxy's order and, when every one answers during its subscription (path and port matchers do) and none
 * matches, the request goes on through the same firewall and nothing else. A chain that matches, a matcher that
 * answers later or fails: the proxy's, which asks again and decides as it always has.
 */
final class SecurityChainSelection implements WebFilter, Ordered {
    /** The proxy's own place among the web filters ({@code WebFluxSecurityConfiguration}'s, not public there). */
    static final int PROXY_ORDER = -100;
    private final WebFilterChainProxy proxy;
    private final List<SecurityWebFilterChain> chains;
    private final ServerWebExchangeFirewall firewall;
    private final ServerExchangeRejectedHandler rejected;

    SecurityChainSelection(WebFilterChainProxy proxy, List<SecurityWebFilterChain> chains,
            ServerWebExchangeFirewall firewall, ServerExchangeRejectedHandler rejected) {
        this.proxy = proxy;
        this.chains = List.copyOf(chains);
        this.firewall = firewall;
        this.rejected = rejected;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        for (SecurityWebFilterChain candidate : chains) {
            if (AnswerAtOnce.of(candidate.matches(exchange)) != AnswerAtOnce.NO) {
                return proxy.filter(exchange, chain);
            }
        }
        return firewall.getFirewalledExchange(exchange).flatMap(chain::filter)
                .onErrorResume(ServerExchangeRejectedException.class,
                        e -> rejected.handle(exchange, e).then(Mono.empty()));
    }

    /** Where the proxy stood: its order among the web filters. */
    @Override
    public int getOrder() {
        return PROXY_ORDER;
    }

    /** What a matcher said while it was subscribed to: yes, no, or nothing yet (an error counts as nothing). */
    enum AnswerAtOnce {
        YES, NO, NOT_YET;

        static AnswerAtOnce of(Mono<Boolean> matches) {
            Probe probe = new Probe();
            matches.subscribe(probe);
            if (!probe.completed) {
                probe.cancel();
                return NOT_YET;
            }
            return Boolean.TRUE.equals(probe.value) ? YES : NO;
        }
    }

    /** Subscribes on the caller's thread; an empty answer is a no, as {@code filterWhen} takes it. */
    private static final class Probe implements CoreSubscriber<Boolean> {
        private Subscription subscription;
        // Volatile: a matcher may answer on another thread just as the caller looks; reading completed then must
        // also show the value given before it, or a late yes would read as a no.
        private volatile Boolean value;
        private volatile boolean completed;

        @Override
        public void onSubscribe(Subscription s) {
            subscription = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Boolean matched) {
            value = matched;
        }

        @Override
        public void onError(Throwable t) {
            // Not completed: the proxy asks again and meets the error itself.
        }

        @Override
        public void onComplete() {
            completed = true;
        }

        void cancel() {
            if (subscription != null) {
                subscription.cancel();
            }
        }
    }
}
