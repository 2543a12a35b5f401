package dev.retrysafe.gateway.idempotency;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * No constructor or method of the library's main code takes more than {@value #MAX} parameters: past that the
 * arguments are a clump that wants a name. A record's canonical constructor is exempt: it is the value itself (the
 * {@code idempotency.*} properties bind through one).
 */
class ParameterCountTest {
    static final int MAX = 8;

    @Test
    void noConstructorOrMethodTakesMoreThanEightParameters() {
        List<String> over = new ArrayList<>();
        for (JavaClass javaClass : PackageRulesTest.LIBRARY) {
            Class<?> type = javaClass.reflect();
            List<Executable> codeUnits = new ArrayList<>(Arrays.asList(type.getDeclaredConstructors()));
            codeUnits.addAll(Arrays.asList(type.getDeclaredMethods()));
            for (Executable unit : codeUnits) {
                if (unit.getParameterCount() > MAX && !unit.isSynthetic() && !isCanonicalConstructor(type, unit)) {
                    over.add(type.getName() + "." + (unit instanceof Constructor<?> ? "<init>" : unit.getName()) + " ("
                            + unit.getParameterCount() + ")");
                }
            }
        }
        assertThat(over).as("constructors and methods over " + MAX + " parameters").isEmpty();
    }

    private static boolean isCanonicalConstructor(Class<?> type, Executable unit) {
        return type.isRecord() && unit instanceof Constructor<?> && Arrays.equals(unit.getParameterTypes(),
                Arrays.stream(type.getRecordComponents()).map(RecordComponent::getType).toArray(Class<?>[]::new));
    }
}
