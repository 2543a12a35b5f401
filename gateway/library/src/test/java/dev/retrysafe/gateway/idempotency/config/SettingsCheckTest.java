package dev.retrysafe.gateway.idempotency.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retrysafe.gateway.idempotency.filter.IdempotencyGatewayFilterFactory;
import dev.retrysafe.gateway.idempotency.filter.InvalidRouteSetting;
import dev.retrysafe.gateway.idempotency.response.ErrorContract;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.core.env.StandardEnvironment;

/** Settings nobody reads fail the startup, naming the nearest valid name; a wrong value is one short message. */
class SettingsCheckTest {
    static final String ROUTE = "spring.cloud.gateway.server.webflux.routes[0].";
    final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
                    DataRedisReactiveAutoConfiguration.class, IdempotencyRedisClientAutoConfiguration.class,
                    IdempotencyStoreAutoConfiguration.class, IdempotencyFleetAutoConfiguration.class,
                    IdempotencyObservabilityAutoConfiguration.class, IdempotencyOperatorAutoConfiguration.class,
                    IdempotencyFilterAutoConfiguration.class))
            // Nothing listens on port 1: the store's startup checks find no Redis (never the machine's on 6379).
            .withPropertyValues("spring.data.redis.port=1");

    @Test
    void aMisspeltPropertyFailsTheStartupNamingTheOneMeant() {
        runner.withPropertyValues("idempotency.key-min-lenght=20").run(context -> {
            assertThat(context).hasFailed();
            FailureAnalysis analysis = new SettingsFailureAnalyzer(new StandardEnvironment())
                    .analyze(context.getStartupFailure());
            assertThat(analysis).isNotNull();
            assertThat(analysis.getDescription())
                    .contains("idempotency.key-min-lenght")
                    .contains("did you mean idempotency.key-min-length?");
            assertThat(analysis.getAction()).contains("docs/reference/configuration.md");
        });
    }

    @Test
    void aNameFarFromEveryPropertyIsNamedWithoutAGuess() {
        runner.withPropertyValues("idempotency.completely-unrelated-thing=1").run(context ->
                assertThat(context.getStartupFailure()).isInstanceOf(UnknownSettings.class)
                        .hasMessageContaining("idempotency.completely-unrelated-thing")
                        .hasMessageNotContaining("did you mean"));
    }

    @Test
    void everyKnownFormStartsListsMapsAndNestedOnes() {
        runner.withPropertyValues("idempotency.key-min-length=20", "idempotency.methods[0]=POST",
                "idempotency.unordered-arrays=sites,integrations", "idempotency.record-counts.enabled=false",
                "idempotency.process-poll.max-delay=30s", "idempotency.openapi.enabled=false")
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void aRouteArgsDocumentationEntryIsNoPropertyAndSaysWhereTheArgGoes() {
        runner.withPropertyValues("idempotency.route-args.retention=1h", "idempotency.route-args.reconcile-uri=/x")
                .run(context -> assertThat(context.getStartupFailure()).isInstanceOf(UnknownSettings.class)
                        .hasMessageContaining("idempotency.route-args.retention")
                        .hasMessageContaining("did you mean the route arg retention (under the Idempotency filter's "
                                + "args), or idempotency.retention for every route?")
                        .hasMessageContaining("did you mean the route arg reconcile-uri (under the Idempotency "
                                + "filter's args)?"));
    }

    @Test
    void theCheckCanBeSwitchedOff() {
        runner.withPropertyValues("idempotency.fail-on-unknown-settings=false", "idempotency.key-min-lenght=20")
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void aMisspeltRouteArgFailsTheStartupNamingTheRouteAndTheArgMeant() {
        runner.withPropertyValues(ROUTE + "id=onboarding", ROUTE + "uri=http://localhost:1",
                ROUTE + "predicates[0]=Path=/merchants/**", ROUTE + "filters[0].name=Idempotency",
                ROUTE + "filters[0].args.unordered-arays=sites").run(context -> {
            assertThat(context).hasFailed();
            String description = new SettingsFailureAnalyzer(new StandardEnvironment())
                    .analyze(context.getStartupFailure()).getDescription();
            assertThat(description).contains("arg unordered-arays of the Idempotency filter")
                    .contains("route 'onboarding'").contains("did you mean unordered-arrays?");
        });
    }

    @Test
    void routeArgsInEitherSpellingAndOtherFiltersArgsAreLeftAlone() {
        runner.withPropertyValues(ROUTE + "id=onboarding", ROUTE + "uri=http://localhost:1",
                ROUTE + "predicates[0]=Path=/merchants/**", ROUTE + "filters[0].name=Idempotency",
                ROUTE + "filters[0].args.keyMinLength=20", ROUTE + "filters[0].args.unordered-arrays=sites",
                ROUTE + "filters[1].name=AddRequestHeader", ROUTE + "filters[1].args.name=X-Anything",
                ROUTE + "filters[1].args.value=1")
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void anInvalidPointerToIgnoreFailsTheStartupNamingTheRouteTheArgAndThePointer() {
        runner.withPropertyValues(ROUTE + "id=webhooks", ROUTE + "uri=http://localhost:1",
                ROUTE + "predicates[0]=Path=/hooks/**", ROUTE + "filters[0].name=Idempotency",
                ROUTE + "filters[0].args.fingerprint-ignore=/sentAt,meta/requestId").run(context -> {
            assertThat(context).hasFailed();
            String description = new SettingsFailureAnalyzer(new StandardEnvironment())
                    .analyze(context.getStartupFailure()).getDescription();
            assertThat(description).contains("route 'webhooks'")
                    .contains("fingerprint-ignore 'meta/requestId' is not a JSON pointer: it must start with '/'")
                    .contains("Set on the route: arg fingerprint-ignore");
        });
    }

    @Test
    void keyFromAndKeyHeaderThatDisagreeFailTheStartup() {
        runner.withPropertyValues(ROUTE + "id=webhooks", ROUTE + "uri=http://localhost:1",
                ROUTE + "predicates[0]=Path=/hooks/**", ROUTE + "filters[0].name=Idempotency",
                ROUTE + "filters[0].args.key-from=body:/id", ROUTE + "filters[0].args.key-header=X-Key").run(context -> {
            assertThat(context).hasFailed();
            String description = new SettingsFailureAnalyzer(new StandardEnvironment())
                    .analyze(context.getStartupFailure()).getDescription();
            assertThat(description).contains("route 'webhooks'")
                    .contains("key-from 'body:/id' and key-header 'X-Key' name different keys: set only key-from");
        });
    }

    @Test
    void theIntentArgsBindFromCommaSeparatedValues() {
        runner.withPropertyValues(ROUTE + "id=webhooks", ROUTE + "uri=http://localhost:1",
                ROUTE + "predicates[0]=Path=/hooks/**", ROUTE + "filters[0].name=Idempotency",
                ROUTE + "filters[0].args.key-from=header:X-GitHub-Delivery",
                ROUTE + "filters[0].args.key-header=x-github-delivery",
                ROUTE + "filters[0].args.fingerprint-ignore=/sentAt,/meta/*/requestId,/a~1b",
                ROUTE + "filters[0].args.fingerprint-headers=X-Api-Version,X-Channel")
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void anUnknownContractOnARouteFailsTheStartupNamingTheAllowedOnes() {
        runner.withPropertyValues(ROUTE + "id=legacy", ROUTE + "uri=http://localhost:1",
                ROUTE + "predicates[0]=Path=/legacy/**", ROUTE + "filters[0].name=Idempotency",
                ROUTE + "filters[0].args.contract=rfc9457").run(context -> {
            assertThat(context).hasFailed();
            String description = new SettingsFailureAnalyzer(new StandardEnvironment())
                    .analyze(context.getStartupFailure()).getDescription();
            assertThat(description).contains("route 'legacy'")
                    .contains("contract must be one of onboarding, ietf; was 'rfc9457'")
                    .contains("Set on the route: arg contract");
        });
    }

    @Test
    void eitherContractStartsOnARouteAndAsTheDefault() {
        runner.withPropertyValues("idempotency.contract=ietf", ROUTE + "id=legacy", ROUTE + "uri=http://localhost:1",
                ROUTE + "predicates[0]=Path=/legacy/**", ROUTE + "filters[0].name=Idempotency",
                ROUTE + "filters[0].args.contract=onboarding").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(IdempotencyProperties.class).contract()).isEqualTo(ErrorContract.IETF);
        });
        runner.run(context -> assertThat(context.getBean(IdempotencyProperties.class).contract())
                .isEqualTo(ErrorContract.ONBOARDING));
    }

    @Test
    void anUnknownDefaultContractFailsTheStartupOnTheProperty() {
        runner.withPropertyValues("idempotency.contract=rfc9457").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("rfc9457");
            Throwable failure = context.getStartupFailure();
            while (failure != null && !(failure instanceof BindException)) {
                failure = failure.getCause();
            }
            // Spring Boot's analysis of it lists the enum's values.
            assertThat(failure).isInstanceOfSatisfying(BindException.class, bind ->
                    assertThat(bind.getProperty().getName()).hasToString("idempotency.contract"));
        });
    }

    @Test
    void aWrongDefaultIsOneMessageNamingThePropertyItsValueAndTheRule() {
        runner.withPropertyValues("idempotency.key-min-length=100").run(context -> {
            IdempotencyGatewayFilterFactory factory = context.getBean(IdempotencyGatewayFilterFactory.class);
            IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
            config.setRouteId("onboarding");
            InvalidRouteSetting failure = catchInvalid(factory, config);
            FailureAnalysis analysis = new SettingsFailureAnalyzer(context.getEnvironment()).analyze(
                    new IllegalStateException("wrapped", failure));
            assertThat(analysis.getDescription())
                    .contains("route 'onboarding'")
                    .contains("key-min-length (100) must not be more than key-max-length (64)")
                    .contains("From the default: idempotency.key-min-length = 100");
            assertThat(analysis.getAction()).contains("Correct idempotency.key-min-length");
        });
    }

    @Test
    void aWrongRouteArgIsNamedAsTheRoutes() {
        runner.run(context -> {
            IdempotencyGatewayFilterFactory factory = context.getBean(IdempotencyGatewayFilterFactory.class);
            IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
            config.setRouteId("onboarding");
            config.setReplayStatus(500);
            InvalidRouteSetting failure = catchInvalid(factory, config);
            assertThat(failure.setting()).contains("replay-status");
            assertThat(failure.setOnRoute()).isTrue();
            assertThat(new SettingsFailureAnalyzer(context.getEnvironment()).analyze(failure).getDescription())
                    .contains("replay-status must be a 2xx status, was 500")
                    .contains("Set on the route: arg replay-status");
        });
    }

    @Test
    void aReconcileUriThatCouldLeaveTheRoutesUpstreamIsNamedAsTheRoutesArg() {
        runner.run(context -> {
            IdempotencyGatewayFilterFactory factory = context.getBean(IdempotencyGatewayFilterFactory.class);
            IdempotencyGatewayFilterFactory.Config config = new IdempotencyGatewayFilterFactory.Config();
            config.setRouteId("onboarding");
            config.setReconcileUri("/merchants?taxId={body:/taxId}#elsewhere");
            InvalidRouteSetting failure = catchInvalid(factory, config);
            assertThat(failure.setting()).contains("reconcile-uri");
            assertThat(failure.setOnRoute()).isTrue();
            assertThat(failure.getMessage()).contains("no fragment");

            IdempotencyGatewayFilterFactory.Config found = new IdempotencyGatewayFilterFactory.Config();
            found.setRouteId("onboarding");
            found.setReconcileUri("/merchants/by-tax-id/{body:/taxId}");
            found.setReconcileFound(404);
            assertThat(catchInvalid(factory, found).setting()).contains("reconcile-found");

            IdempotencyGatewayFilterFactory.Config alone = new IdempotencyGatewayFilterFactory.Config();
            alone.setRouteId("onboarding");
            alone.setReconcileAfter(java.time.Duration.ofSeconds(5));
            assertThat(catchInvalid(factory, alone).getMessage()).contains("reconcile-uri is needed");
        });
    }

    @Test
    void aReconcileUriOnABodyKeyRouteLooksUpByTheBodyValueNotByTheHashedKey() {
        runner.run(context -> {
            IdempotencyGatewayFilterFactory factory = context.getBean(IdempotencyGatewayFilterFactory.class);
            IdempotencyGatewayFilterFactory.Config byKey = new IdempotencyGatewayFilterFactory.Config();
            byKey.setRouteId("webhooks");
            byKey.setKeyFrom("body:/id");
            byKey.setReconcileUri("/events/{key}");
            InvalidRouteSetting failure = catchInvalid(factory, byKey);
            assertThat(failure.setting()).contains("reconcile-uri");
            assertThat(failure.setOnRoute()).isTrue();
            assertThat(failure.getMessage()).contains("takes its key from the body (key-from: body:/id)")
                    .contains("look up by {body:/id} instead");

            IdempotencyGatewayFilterFactory.Config byBodyValue = new IdempotencyGatewayFilterFactory.Config();
            byBodyValue.setRouteId("webhooks");
            byBodyValue.setKeyFrom("body:/id");
            byBodyValue.setReconcileUri("/events/{body:/id}");
            assertThat(factory.apply(byBodyValue)).isNotNull();

            IdempotencyGatewayFilterFactory.Config byDeliveryHeader = new IdempotencyGatewayFilterFactory.Config();
            byDeliveryHeader.setRouteId("webhooks");
            byDeliveryHeader.setKeyFrom("header:X-GitHub-Delivery");
            byDeliveryHeader.setReconcileUri("/deliveries/{key}");
            assertThat(factory.apply(byDeliveryHeader)).isNotNull();
        });
    }

    private static InvalidRouteSetting catchInvalid(IdempotencyGatewayFilterFactory factory,
            IdempotencyGatewayFilterFactory.Config config) {
        try {
            factory.apply(config);
        } catch (InvalidRouteSetting expected) {
            return expected;
        }
        throw new AssertionError("the filter was built from invalid settings");
    }

    @Test
    void theNearestNameForgivesTyposButNotStrangers() {
        assertThat(NearestName.distance("lenght", "length")).isEqualTo(1);
        assertThat(NearestName.to("key-min-lenght", java.util.List.of("key-min-length", "key-max-length")))
                .contains("key-min-length");
        assertThat(NearestName.to("color", java.util.List.of("key-min-length", "retention"))).isEmpty();
    }
}
