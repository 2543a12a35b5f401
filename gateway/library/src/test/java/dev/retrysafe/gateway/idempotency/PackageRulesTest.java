package dev.retrysafe.gateway.idempotency;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** The rules each package-info.java states, checked on the library's compiled classes. */
class PackageRulesTest {
    static final String ROOT = "dev.retrysafe.gateway.idempotency";
    static final JavaClasses LIBRARY = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages(ROOT);

    @Test
    void theRulesArePlainJava() {
        noClasses().that().resideInAnyPackage(ROOT + ".key..", ROOT + ".fingerprint..", ROOT + ".scope..",
                        ROOT + ".record..", ROOT + ".decision..", ROOT + ".encryption..", ROOT + ".pointer..")
                .should().dependOnClassesThat().resideInAnyPackage("org.springframework..", "reactor..",
                        "io.lettuce..", "io.netty..", "io.micrometer..")
                .check(LIBRARY);
    }

    @Test
    void onlyTheRedisAdapterAndTheWiringKnowRedis() {
        noClasses().that().resideOutsideOfPackages(ROOT + ".store.redis..", ROOT + ".config..")
                .should().dependOnClassesThat().resideInAnyPackage("org.springframework.data.redis..", "io.lettuce..")
                .check(LIBRARY);
    }

    @Test
    void nothingImportsTheWiring() {
        noClasses().that().resideOutsideOfPackage(ROOT + ".config..")
                .should().dependOnClassesThat().resideInAnyPackage(ROOT + ".config..")
                .check(LIBRARY);
    }

    @Test
    void theFilterSeesTheStoreOnlyThroughItsInterface() {
        noClasses().that().resideInAPackage(ROOT + ".filter..")
                .should().dependOnClassesThat().resideInAPackage(ROOT + ".store.redis..")
                .check(LIBRARY);
    }

    @Test
    void nothingBelowTheFilterReachesBackUpIntoIt() {
        noClasses().that().resideOutsideOfPackages(ROOT + ".filter..", ROOT + ".config..")
                .should().dependOnClassesThat().resideInAPackage(ROOT + ".filter..")
                .check(LIBRARY);
    }

    @Test
    void packagesDoNotDependOnEachOtherInCircles() {
        slices().matching(ROOT + ".(*)..").should().beFreeOfCycles().check(LIBRARY);
    }
}
