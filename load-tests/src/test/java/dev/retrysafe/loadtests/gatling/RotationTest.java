package dev.retrysafe.loadtests.gatling;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Round robin per request over the instances the rotation file lists, re-read as the file changes. */
class RotationTest {

    private static final List<String> THREE = List.of("http://a:1", "http://b:2/", "http://c:3");

    private final AtomicLong clock = new AtomicLong();

    @Test
    void withoutAFileEachRequestGoesToTheNextInstance() {
        Rotation rotation = new Rotation(THREE, null, clock::get);

        assertThat(take(rotation, 6)).containsExactly("http://a:1", "http://b:2", "http://c:3",
                "http://a:1", "http://b:2", "http://c:3");
    }

    @Test
    void anInstanceTakenOutOfTheFileGetsNoRequestUntilItIsPutBack(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("in-service");
        Files.write(file, List.of("http://a:1", "http://c:3/"));
        Rotation rotation = new Rotation(THREE, file, clock::get);

        assertThat(take(rotation, 4)).containsOnly("http://a:1", "http://c:3").contains("http://a:1", "http://c:3");

        Files.write(file, List.of("http://a:1", "http://b:2", "http://c:3"));
        // Not seen before the recheck interval has passed ...
        assertThat(take(rotation, 4)).doesNotContain("http://b:2");
        clock.addAndGet(Rotation.RECHECK_NANOS);
        // ... then at once.
        assertThat(take(rotation, 3)).containsExactlyInAnyOrder("http://a:1", "http://b:2", "http://c:3");
    }

    @Test
    void aMissingOrEmptyFileOrOneNamingNoKnownInstanceMeansAllAreInService(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("in-service");
        Rotation rotation = new Rotation(THREE, file, clock::get);
        assertThat(take(rotation, 3)).containsExactlyInAnyOrder("http://a:1", "http://b:2", "http://c:3");

        Files.write(file, List.of("", "http://elsewhere:9"));
        clock.addAndGet(Rotation.RECHECK_NANOS);
        assertThat(take(rotation, 3)).containsExactlyInAnyOrder("http://a:1", "http://b:2", "http://c:3");
    }

    private static List<String> take(Rotation rotation, int count) {
        List<String> taken = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            taken.add(rotation.next());
        }
        return taken;
    }
}
